"""Same seed, same draws: every method and back end, floors and ceilings too, cold or warm compile cache."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

SCRIPT = """
import sys
import numpy as np
from benchmirt_bayes import AsymptotePlan, fit_posterior, simulate_benchmirt

responses = simulate_benchmirt(scale=0.002, n_llms=20, seed=3).responses
options = {"MMLU-Pro": 10, "GPQA": 4, "WMDP": 4}
plan = AsymptotePlan(n_options=options, capped_share=dict.fromkeys(options, 0.25))
floored = simulate_benchmirt(scale=0.003, n_llms=20, seed=3, asymptotes=plan).responses
small = {"draws": 15, "tune": 15, "chains": 2}
fits = {
    sampler: fit_posterior(responses, 2, seed=7, progressbar=False, nuts={**small, "sampler": sampler})
    for sampler in ("nutpie", "pymc", "numpyro")
}
fits["nutpie-4pl"] = fit_posterior(
    floored, 2, seed=7, progressbar=False, nuts=small,
    spec={"binary": {"asymptotes": "4pl", "n_options": options}},
)
fits |= {
    "advi": fit_posterior(
        responses, 2, method="advi", seed=7, progressbar=False, advi={"draws": 10, "max_steps": 300}
    ),
}
np.savez(sys.argv[1], **{name: fit["posterior"]["intercept"].values for name, fit in fits.items()})
"""


@pytest.mark.slow
def test_same_seed_gives_the_same_draws_with_a_cold_and_a_warm_compile_cache(tmp_path):
    script = tmp_path / "fits.py"
    script.write_text(SCRIPT)
    env = {**os.environ, "PYTENSOR_FLAGS": f"base_compiledir={tmp_path / 'compiledir'}"}
    runs = []
    for name in ("cold", "warm"):  # the first run fills the fresh compile folder, the second reuses it
        out = tmp_path / f"{name}.npz"
        result = subprocess.run(
            [sys.executable, str(script), str(out)], env=env, capture_output=True, text=True, timeout=900
        )
        assert result.returncode == 0, result.stderr[-3000:]
        runs.append(np.load(out))
    assert any(Path(tmp_path / "compiledir").iterdir())
    for backend in ("nutpie", "nutpie-4pl", "pymc", "numpyro", "advi"):
        np.testing.assert_array_equal(runs[0][backend], runs[1][backend], err_msg=backend)
