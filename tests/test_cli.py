import json
import subprocess
import sys

import pandas as pd
import pytest
import xarray as xr

from benchmirt_bayes.cli import main
from benchmirt_bayes.posterior import fit_spec


def run_cli(*args):
    return subprocess.run(
        [sys.executable, "-m", "benchmirt_bayes.cli", *args], capture_output=True, text=True, check=False
    )


def test_help_lists_every_subcommand():
    result = run_cli("--help")
    assert result.returncode == 0
    for command in ("demo", "simulate", "info", "fit", "report", "specs", "select", "cv"):
        assert command in result.stdout
    assert "examples:" in result.stdout


def test_no_command_prints_help(capsys):
    assert main([]) == 0
    assert "usage: benchmirt" in capsys.readouterr().out


@pytest.mark.slow
def test_simulate_info_fit_report(tmp_path, capsys):
    data = tmp_path / "sim.nc"
    assert main(["simulate", "--scale", "0.003", "--llms", "30", "--out", str(data)]) == 0
    assert main(["info", str(data)]) == 0
    assert "30 LLMs" in capsys.readouterr().out
    fit = tmp_path / "fit.nc"
    assert (
        main(
            [
                "fit",
                str(data),
                "--dims",
                "2",
                "--method",
                "advi",
                "--draws",
                "50",
                "--seed",
                "1",
                "--out",
                str(fit),
            ]
        )
        == 0
    )
    assert fit.exists()
    assert main(["report", str(fit), "--out", str(tmp_path / "report")]) == 0
    assert (tmp_path / "report" / "index.html").exists()
    items = tmp_path / "items.csv"
    assert (
        main(["select", str(fit), "--fraction", "0.2", "--method", "information", "--out", str(items)]) == 0
    )
    kept = pd.read_csv(items)
    n_items = xr.open_datatree(fit)["posterior"].sizes["item"]
    assert len(kept) == round(0.2 * n_items) and {"information_mean", "p_top_k"} <= set(kept.columns)
    table = tmp_path / "cv.csv"
    args = ["cv", str(data), "--dims", "1", "2", "--folds", "2", "--method", "advi", "--serial"]
    args += ["--out", str(table)]
    assert main(args) == 0
    cv = pd.read_csv(table)
    assert {"mirt_1d", "mirt_2d", "llm_x_benchmark_mean"} <= set(cv["model"])
    assert (tmp_path / "cv_summary.csv").exists()


def test_bad_data_gives_a_clear_error_and_exit_code(tmp_path, capsys):
    bad = tmp_path / "bad.csv"
    bad.write_text("llm,item,correct\na,q1,7\n")
    assert main(["info", str(bad), "--benchmark", "X"]) == 2
    assert "outside {0, 1}" in capsys.readouterr().err


def test_specs_lists_the_shipped_specs(capsys):
    assert main(["specs"]) == 0
    assert "exploratory" in capsys.readouterr().out


@pytest.mark.slow
def test_demo_writes_a_report(tmp_path):
    assert main(["demo", "--out", str(tmp_path / "demo"), "--scale", "0.01"]) == 0
    page = (tmp_path / "demo" / "index.html").read_text()
    assert "Posterior predictive check" in page and (tmp_path / "demo" / "fit.nc").exists()


@pytest.mark.slow
def test_fit_nuts_from_advi_on_the_command_line(tmp_path):
    data = tmp_path / "sim.nc"
    assert main(["simulate", "--scale", "0.002", "--llms", "20", "--out", str(data)]) == 0
    fit = tmp_path / "fit.nc"
    args = ["fit", str(data), "--method", "nuts", "--init", "advi", "--max-treedepth", "3", "--thin", "2"]
    args += ["--draws", "20", "--tune", "20", "--chains", "2", "--seed", "2", "--out", str(fit)]
    assert main(args) == 0
    tree = xr.open_datatree(fit)
    settings = json.loads(tree.attrs["benchmirt_settings"])
    nuts = settings["nuts"]
    assert nuts["init"] == "advi" and nuts["max_treedepth"] == 3 and nuts["thin"] == 2
    assert tree["posterior"].sizes["draw"] == 20
    assert int(tree["sample_stats"]["n_steps"].max()) <= 2 * 7  # a kept draw counts its block's steps


def test_fit_takes_binary_asymptotes_and_refuses_auto_where_nothing_chooses(tmp_path, capsys):
    data = tmp_path / "sim.nc"
    assert main(["simulate", "--scale", "0.002", "--llms", "15", "--out", str(data)]) == 0
    fit = tmp_path / "fit.nc"
    common = ["fit", str(data), "--seed", "1", "--out", str(fit)]
    assert main([*common, "--method", "advi", "--asymptotes", "auto"]) == 2
    assert "chosen from NUTS fits" in capsys.readouterr().err
    assert main([*common, "--n-options", "GPQA=four"]) == 2
    assert "whole numbers" in capsys.readouterr().err
    assert main([*common, "--asymptotes", "GPQA=5pl"]) == 2
    assert "must be one of" in capsys.readouterr().err
    cv = ["cv", str(data), "--asymptotes", "auto", "--out", str(tmp_path / "cv.csv")]
    assert main(cv) == 2
    assert "chosen by `benchmirt fit`" in capsys.readouterr().err
    assert main([*common, "--method", "map", "--asymptotes", "GPQA=4pl", "--n-options", "GPQA=4"]) == 0
    tree = xr.open_datatree(fit)
    gpqa = tree["observed_data"]["benchmark"].values == "GPQA"
    floor, ceiling = tree["posterior"]["floor"].values[0, 0], tree["posterior"]["ceiling"].values[0, 0]
    assert (floor[gpqa] > 0).all() and (floor[~gpqa] == 0).all() and (ceiling[gpqa] < 1).all()
    assert fit_spec(tree)["binary"]["n_options"] == {"GPQA": 4}


def test_cv_fits_its_folds_as_cross_validate_does_unless_draws_are_given(tmp_path, monkeypatch):
    import benchmirt_bayes.workflows.crossval as crossval

    data = tmp_path / "sim.nc"
    assert main(["simulate", "--scale", "0.002", "--llms", "15", "--out", str(data)]) == 0
    asked = []

    class Stop(Exception):
        pass

    def capture(responses, **kwargs):
        asked.append(kwargs)
        raise Stop

    monkeypatch.setattr(crossval, "cross_validate", capture)
    for extra in ([], ["--draws", "300"]):
        with pytest.raises(Stop):
            main(["cv", str(data), "--out", str(tmp_path / "cv.csv"), *extra])
    default, given = asked
    # NUTS fold fits as fit_posterior resolves them (not 100 draws), ADVI fold fits 100 draws
    assert default["nuts"].draws == "auto" and default["advi"].draws == crossval.FOLD_ADVI_DRAWS
    assert given["nuts"].draws == 300 and given["advi"].draws == 300
