"""Fit py-irt's ``multidim_2pl`` with the published settings; run with the py-irt environment's Python.

    /path/to/pyirt-env/bin/python benchmarks/pyirt_run.py TRAIN.jsonlines OUT.json --epochs 5000

Published settings (BenchMIRT): 2 dimensions, Adam lr 0.2, 5,000 full-batch epochs, point
estimates = the variational means at the epoch with the lowest loss (``best_params``).
Writes ``ability (subject, dim)``, ``diff``/``disc (item, dim)``, the id orders and the wall time.
"""

import argparse
import json
import time

from py_irt.config import IrtConfig
from py_irt.training import IrtModelTrainer

parser = argparse.ArgumentParser()
parser.add_argument("data")
parser.add_argument("out")
parser.add_argument("--epochs", type=int, default=5000)
parser.add_argument("--lr", type=float, default=0.2)
parser.add_argument("--dims", type=int, default=2)
parser.add_argument("--seed", type=int, default=1)
args = parser.parse_args()
config = IrtConfig(model_type="multidim_2pl", epochs=args.epochs, lr=args.lr, dims=args.dims, seed=args.seed)
start = time.perf_counter()
trainer = IrtModelTrainer(data_path=args.data, config=config, verbose=False)
trainer.train(device="cpu")
wall = time.perf_counter() - start
params = trainer.best_params
result = {
    "ability": params["ability"],
    "diff": params["diff"],
    "disc": params["disc"],
    "item_ids": {str(k): v for k, v in params["item_ids"].items()},
    "subject_ids": {str(k): v for k, v in params["subject_ids"].items()},
    "wall_s": wall,
}
with open(args.out, "w") as handle:
    json.dump(result, handle)
