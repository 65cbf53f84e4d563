"""Seconds-long smoke runs of the benchmark scripts (the real runs are documented in the README)."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from .conftest import shared_path

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_harness_smoke_run_writes_its_table(tmp_path):
    command = [sys.executable, str(ROOT / "benchmarks" / "harness.py"), "--smoke", "--out", str(tmp_path)]
    result = subprocess.run(command, capture_output=True, text=True, check=False, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    table = pd.read_csv(tmp_path / "harness.csv")
    configs = {"reference_pymc", "package_nuts", "package_nuts_float64", "package_nuts_advi_init"}
    configs |= {"package_nuts_depth5_thin2"}
    configs |= {"package_nuts_low_rank", "package_mclmc", "package_advi", "planted_2pl", "planted_4pl"}
    assert set(table["config"]) == configs | {"minibatch_advi", "logp_grad", "pyirt"}
    assert table.set_index("config").loc["pyirt", "note"].startswith("not run")  # no py-irt env in CI
    assert "error" not in table or table["error"].isna().all()
    nuts = table.set_index("config").loc["package_nuts"]
    assert nuts["min_bulk_ess"] > 0 and 0 < nuts["held_out_accuracy"] <= 1
    assert table.set_index("config").loc["package_nuts", "ess_per_s_ratio"] > 0
    assert nuts["steps_per_draw"] >= 1 and nuts["ess_per_1k_steps"] > 0
    assert table.set_index("config").loc["package_nuts_advi_init", "min_bulk_ess"] > 0
    # the default row calls fit_posterior with no speed settings; the ratio compares it with the fastest
    settings = json.loads(nuts["settings"])
    assert {"nuts.init", "nuts.max_treedepth", "nuts.thin", "likelihood"} <= {
        k for k, _ in settings["automatic"]
    }
    assert nuts["default_vs_best_wall"] >= 1
    float64 = table.set_index("config").loc["package_nuts_float64"]
    assert json.loads(float64["settings"])["likelihood"] == "fused64" and nuts["ess_per_s_vs_float64"] > 0
    planted = table.set_index("config").loc["planted_4pl"]
    assert planted["cost_vs_2pl"] > 0 and json.loads(planted["settings"])["likelihood"] == "fused"
    assert 0.5 < table.set_index("config").loc["minibatch_advi", "held_out_accuracy"] <= 1
    assert (tmp_path / "harness.md").read_text().startswith("Measured ")


@pytest.mark.slow
def test_default_speedup_fits_both_packages_on_the_same_data(tmp_path):
    command = [sys.executable, str(ROOT / "benchmarks" / "default_speedup.py"), "--smoke"]
    command += ["--long-draws", "1", "--out", str(tmp_path)]
    result = subprocess.run(command, capture_output=True, text=True, check=False, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    table = pd.read_csv(tmp_path / "default_speedup.csv").set_index("side")
    assert list(table.index) == ["reference", "current", "current_same_budget", "long_reference"]
    assert table["same_data"].all() and (table["min_bulk_ess"] > 0).all()
    assert table.loc["reference", "ess_per_s_vs_reference"] == 1
    assert "current vs long" in (tmp_path / "default_speedup.md").read_text()


@pytest.mark.slow
def test_gpu_script_runs_on_cpu_at_reduced_size(tmp_path):
    out = tmp_path / "gpu.json"
    command = [sys.executable, str(ROOT / "benchmarks" / "gpu_nuts.py"), "--scale", "0.002", "--llms", "20"]
    command += ["--draws", "20", "--tune", "20", "--chains", "2", "--out", str(out)]
    result = subprocess.run(command, capture_output=True, text=True, check=False, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(out.read_text())
    assert report["chains"] == 2 and report["wall_s"] > 0 and report["devices"]


@pytest.mark.slow
@pytest.mark.parametrize("name", ["asymptote_recovery", "asymptote_real", "auto_asymptotes"])
def test_asymptote_scripts_quick_runs_write_their_tables(name, tmp_path):
    if name == "asymptote_real":
        shared_path("open_llm_leaderboard_v1")
    benchmark = {b.name: b for b in _run_all_module().BENCHMARKS}[name]
    args = [a.format(out=tmp_path) for a in benchmark.quick]
    command = [sys.executable, str(ROOT / "benchmarks" / benchmark.script), *args]
    result = subprocess.run(command, capture_output=True, text=True, check=False, timeout=900, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-3000:]
    text = (tmp_path / benchmark.table_file).read_text()
    assert text.startswith("# ") and "commit " in text
    rows = [line for line in text.splitlines() if line.startswith("| ") and "---" not in line]
    cells = {cell.strip() for row in rows for cell in row.split("|")}
    if name == "auto_asymptotes":  # every benchmark compared, the findings of both fits, every fit's cost
        assert {"MMLU-Pro", "MuSR", "HarmBench", "BBQ tracks reasoning (more than safety)"} <= cells
        assert {"2pl (every benchmark)", "3pl (every benchmark)", "4pl (every benchmark)"} <= cells
        return
    models = {"2pl", "4pl"} if name == "asymptote_recovery" else {"2pl", "3pl", "4pl", "metabench params"}
    assert models <= cells
    if name == "asymptote_recovery":
        assert "## The 4PL's floors per benchmark" in text
        assert {"MMLU-Pro", "GPQA", "WMDP", "BBQ", "MuSR"} <= cells


@pytest.mark.slow
def test_selection_optimism_quick_run_compares_every_route(tmp_path):
    shared_path("open_llm_leaderboard_v1")
    benchmark = {b.name: b for b in _run_all_module().BENCHMARKS}["selection_optimism"]
    args = [a.format(out=tmp_path) for a in benchmark.quick]
    command = [sys.executable, str(ROOT / "benchmarks" / benchmark.script), *args]
    result = subprocess.run(command, capture_output=True, text=True, check=False, timeout=900, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-3000:]
    rows = pd.read_csv(tmp_path / "rows.csv")
    routes = {
        "stepwise on the training LLMs",
        "stepwise on other LLMs",
        "random",
        "stepwise chosen by the link",
    }
    assert set(rows["route"]) == routes and len(rows) == 4 * 20  # one fold of 100 LLMs held out
    assert rows.groupby("route")["llm"].apply(frozenset).nunique() == 1  # the same held-out LLMs
    assert ((rows["lower"] <= rows["estimate"]) & (rows["estimate"] <= rows["upper"])).all()
    text = (tmp_path / benchmark.table_file).read_text()
    assert text.startswith("# ") and "commit " in text and "stepwise on other LLMs" in text


def test_minibatch_scale_smoke_run_reports_recovery(tmp_path):
    command = [
        sys.executable,
        str(ROOT / "benchmarks" / "minibatch_scale.py"),
        "--smoke",
        "--out",
        str(tmp_path),
    ]
    result = subprocess.run(command, capture_output=True, text=True, check=False, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["cells"] == 200 * 2000 and summary["epochs"] >= 3
    assert summary["recovery_r"]["ability"] > 0.95
    assert summary["seconds_optimising"] > 0


def _run_all_module():
    import importlib.util

    spec = importlib.util.spec_from_file_location("run_all", ROOT / "benchmarks" / "run_all.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["run_all"] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_run_all_stamps_each_section_and_keeps_the_others_with_only(tmp_path):
    run_all = _run_all_module()
    script = tmp_path / "tiny.py"
    script.write_text("import sys\nprint('| a | b |\\n|---|---|\\n| 1 |', sys.argv[1], '|')\n")
    bench = run_all.Benchmark("tiny", "A tiny table", str(script), ("quick-arg",), ("full-arg",))
    failing = run_all.Benchmark("broken", "Fails", str(script), ("x",), None)
    section = run_all.run(bench, True, tmp_path / "work", tmp_path)
    assert "## A tiny table" in section and "| 1 | quick-arg |" in section
    assert " UTC · " in section and "commit " in section and "quick-arg`" in section
    assert "Not run by this command" in run_all.run(failing, False, tmp_path / "work", tmp_path)
    results = tmp_path / "RESULTS.md"
    run_all.write({"tiny": section, "other": "<!-- section: other -->\n## Other\n\nkept\n"}, results)
    sections = run_all.existing_sections(results)
    assert set(sections) == {"tiny", "other"} and sections["other"].strip().endswith("kept")
    assert [b.name for b in run_all.BENCHMARKS if b.full is None] == []


def test_run_all_passes_metabench_on_to_the_scripts_that_compare_with_it(tmp_path):
    run_all = _run_all_module()
    script = tmp_path / "echo.py"
    script.write_text("import sys\nprint(' '.join(sys.argv[1:]))\n")
    compares = run_all.Benchmark("cmp", "Compares", str(script), ("q",), ("f",), fenced=True, metabench=True)
    plain = run_all.Benchmark("plain", "Plain", str(script), ("q",), ("f",), fenced=True)
    checkout = tmp_path / "metabench"
    with_it = run_all.run(compares, True, tmp_path / "work", tmp_path, metabench=str(checkout))
    assert f"q --metabench {checkout.resolve()}" in with_it and "q --metabench METABENCH`" in with_it
    assert "need a checkout" not in with_it
    without = run_all.run(compares, True, tmp_path / "work", tmp_path)
    assert "need a checkout" in without and "--metabench" not in without.split("need a checkout")[0]
    assert "--metabench" not in run_all.run(plain, True, tmp_path / "work", tmp_path, metabench=str(checkout))
    assert [b.name for b in run_all.BENCHMARKS if b.metabench] == ["score_estimation"]


def test_small_population_tables_pair_each_route_with_the_blend(monkeypatch):
    """Coverage, MAE and the paired MAE difference to the blend, from a hand-made prediction table."""
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    from small_population_scores import DEFAULT, REFERENCE, headline, summarise

    cells = [
        {"set": "s", "N": 20, "fold": 0, "k": 10, "llm": f"m{i}", "benchmark": "b", "truth": 50.0}
        for i in range(4)
    ]
    rows = []
    for i, cell in enumerate(cells):
        rows.append(cell | {"route": REFERENCE, "estimate": 50.0 + 2 * (i + 1), "lower": 40.0, "upper": 60.0})
        rows.append(cell | {"route": DEFAULT, "estimate": 50.0 + (i + 1), "lower": 51.0 + i, "upper": 70.0})
    table = summarise(pd.DataFrame(rows)).set_index("route")
    assert table.loc[REFERENCE, "coverage_90"] == 1.0 and table.loc[DEFAULT, "coverage_90"] == 0.0
    assert table.loc[REFERENCE, "mae"] == pytest.approx(5.0) and table.loc[DEFAULT, "mae"] == pytest.approx(
        2.5
    )
    assert table.loc[DEFAULT, "mae_minus_blend"] == pytest.approx(-2.5)
    assert table.loc[DEFAULT, "paired_se"] == pytest.approx(pd.Series([-1.0, -2, -3, -4]).std() / 2)
    row = headline(table.reset_index()).iloc[0]
    assert row["default MAE"] == pytest.approx(2.5) and row["default − blend (paired SE)"] == "-2.50 (0.65)"


def test_posterior_agreement_tells_a_shifted_posterior_from_a_resampled_one():
    import importlib.util

    import xarray as xr

    script = ROOT / "benchmarks" / "bench_tables.py"
    spec = importlib.util.spec_from_file_location("bench_tables", script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    rng = np.random.default_rng(0)

    def posterior(shift: float) -> xr.Dataset:
        draws = {"ability": (("chain", "draw", "llm"), rng.normal(shift, 1, (2, 500, 300)))}
        draws["intercept"] = (("chain", "draw", "item"), rng.normal(0, 1, (2, 500, 200)))
        return xr.Dataset(draws)

    same = module.posterior_agreement(posterior(0.0), posterior(0.0))
    assert same["quantities"] == 500 and same["share_over_3"] < 0.02 and same["share_over_2"] < 0.1
    shifted = module.posterior_agreement(posterior(0.0), posterior(0.5))
    assert shifted["share_over_3"] > 0.5
