"""Wall time of a 10-fold × 3-dimension cross-validation sweep: serial vs a local Dask cluster.

Both runs use the same reduced-scale simulated data, seeds and settings, in this process,
one after the other; the tables must agree to floating-point summation order.

    python benchmarks/cluster_sweep.py --scale 0.01 --llms 60 --workers 2
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from benchmirt_bayes import DaskExecutor, cross_validate, simulate_benchmirt


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--scale", type=float, default=0.01)
    parser.add_argument("--llms", type=int, default=60)
    parser.add_argument("--folds", type=int, default=10)
    parser.add_argument("--dims", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    responses = simulate_benchmirt(scale=args.scale, n_llms=args.llms, seed=1).responses
    kwargs = {"n_dims": args.dims, "folds": args.folds, "method": "advi", "seed": 42, "progressbar": False}
    print(f"{responses}; {args.folds} folds × dims {args.dims} = {args.folds * len(args.dims)} ADVI fits")
    # warm PyTensor's compile cache first, so that neither timed run pays for compilation alone
    cross_validate(responses, **{**kwargs, "folds": 2}, executor="serial")
    start = time.perf_counter()
    serial = cross_validate(responses, executor="serial", **kwargs)
    serial_s = time.perf_counter() - start
    start = time.perf_counter()
    with DaskExecutor(workers=args.workers) as executor:
        startup_s = time.perf_counter() - start
        on_cluster = cross_validate(responses, executor=executor, **kwargs)
    cluster_s = time.perf_counter() - start
    a, b = serial.table["value"].to_numpy(), on_cluster.table["value"].to_numpy()
    assert np.array_equal(np.isnan(a), np.isnan(b)), "the two tables differ in which values are NaN"
    difference = np.nanmax(np.abs(a - b))
    print(f"serial:                {serial_s:8.1f} s")
    print(
        f"local Dask cluster ({args.workers}w): {cluster_s:8.1f} s (of which cluster start {startup_s:.1f} s)"
    )
    print(f"speed-up:              {serial_s / cluster_s:8.2f}x")
    print(f"max |difference| between the two tables: {difference:.2e}")


if __name__ == "__main__":
    main()
