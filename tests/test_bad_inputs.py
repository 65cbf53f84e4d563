"""Bad inputs as a careful user would try them: each is an error of a known type that names the culprit.

(Damaged files are in test_io.py, a killed worker and an edited cached result in
test_batch.py, cold-cache seeds in test_reproducibility.py, published result layouts in
test_result_formats.py.)
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from benchmirt_bayes import ResponseDataError, fit_posterior, load_responses, load_spec
from benchmirt_bayes.cli import main

META = pd.DataFrame({"item": ["q1", "q2"], "benchmark": ["MATH", "MATH"]})


def problems(info) -> str:
    return "\n".join(info.value.problems)


# ------------------------------------------------------------------- ids
def test_ids_that_look_like_numbers_stay_as_written(tmp_path):
    path = tmp_path / "long.csv"
    path.write_text("llm,item,correct,benchmark\n007,1.10,1,B\n7,1.10,0,B\n007,1.1,1,B\n7,1.1,1,B\n")
    m = load_responses(path)
    assert sorted(m.llms) == ["007", "7"] and sorted(m.items) == ["1.1", "1.10"]
    assert m.data.sel(llm="7", item="1.10").item() == 0


def test_na_like_ids_are_ids_and_an_empty_id_names_its_row(tmp_path):
    path = tmp_path / "long.csv"
    path.write_text("llm,item,correct\nNA,q1,1\nNone,q1,0\nnull,q1,1\nn/a,q2,1\n,q2,0\n")
    with pytest.raises(ResponseDataError) as info:
        load_responses(path, item_metadata=META)
    assert "1 empty or missing LLM id(s) at table row(s) 4" in problems(info)
    path.write_text("llm,item,correct\nNA,q1,1\nNone,q1,0\nnull,q1,1\nn/a,q2,1\n")
    assert sorted(load_responses(path, item_metadata=META).llms) == ["NA", "None", "n/a", "null"]


def test_a_wide_file_without_an_llm_id_column_is_refused(tmp_path):
    path = tmp_path / "wide.csv"
    path.write_text("q1,q2\n1,0\n0,1\n")
    with pytest.raises(ResponseDataError, match="first column 'q1' holds numbers, not LLM ids"):
        load_responses(path, format="wide", item_metadata=META)


def test_a_benchmark_column_that_disagrees_within_an_item_is_named():
    table = pd.DataFrame(
        {
            "llm": ["a", "b", "a"],
            "item": ["q1", "q1", "q2"],
            "correct": [1, 0, 1],
            "benchmark": ["X", "Y", "X"],
        }
    )
    with pytest.raises(ResponseDataError, match=r"disagrees within an item .* benchmark: 'q1'"):
        load_responses(table)


def test_a_duplicate_item_column_is_named(tmp_path):
    path = tmp_path / "wide.csv"
    path.write_text("llm,q1,q2,q1\na,1,0,1\nb,0,1,0\n")
    with pytest.raises(ResponseDataError, match=r"duplicate column name\(s\) in the header: 'q1'"):
        load_responses(path, format="wide", item_metadata=META)
    frame = pd.DataFrame([[1, 0, 1]], columns=["q1", "q2", "q1"])
    with pytest.raises(ResponseDataError, match="duplicate column name"):
        load_responses(frame, format="wide", item_metadata=META)


def test_a_pyirt_subject_without_responses_is_named(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text(
        json.dumps({"subject_id": "a", "responses": {"q1": 1}})
        + "\n"
        + json.dumps({"subject_id": "ghost", "responses": {}})
    )
    with pytest.raises(ResponseDataError, match=r"1 LLM\(s\) with no responses .*'ghost'"):
        load_responses(path, item_metadata=META)


def test_pyirt_responses_as_a_list_and_bad_bytes_name_the_line(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text('{"subject_id": "a", "responses": {"q1": 1}}\n{"subject_id": "b", "responses": [1, 0]}\n')
    with pytest.raises(
        ResponseDataError, match="line 2: 'responses' must map item ids to values, got a list"
    ):
        load_responses(path, item_metadata=META)
    path.write_bytes(
        b'{"subject_id": "a", "responses": {"q1": 1}}\n{"subject_id": "\xff", "responses": {}}\n'
    )
    with pytest.raises(ResponseDataError, match="line 2: not UTF-8"):
        load_responses(path, item_metadata=META)


# ----------------------------------------------------------- orientation
def test_items_as_rows_with_an_unnamed_index_is_not_transposed_silently(tmp_path):
    path = tmp_path / "items_as_rows.csv"
    frame = pd.DataFrame(
        np.ones((5, 3)), columns=["run_a", "run_b", "run_c"], index=[f"q{i}" for i in range(5)]
    )
    frame.to_csv(path)  # first column unnamed: the item ids
    with pytest.raises(
        ResponseDataError, match="cannot tell whether the rows of this table are LLMs or items"
    ):
        load_responses(path, benchmark="chem")
    meta = pd.DataFrame({"item": frame.index, "benchmark": "chem"})
    assert load_responses(path, item_metadata=meta).n_llms == 3  # the metadata decides: items as rows


def test_plus_minus_one_coding_is_recognised():
    table = pd.DataFrame({"llm": ["a", "a", "b"], "item": ["q1", "q2", "q1"], "correct": [1, -1, -1]})
    with pytest.raises(ResponseDataError, match=r"coded -1/\+1 .*binarize=0") as info:
        load_responses(table, item_metadata=META)
    assert "continuous" not in problems(info)
    assert load_responses(table, item_metadata=META, binarize=0).values[0].tolist() == [1.0, 0.0]


# ----------------------------------------------------- crashes → errors
def test_semicolon_separated_and_uppercase_parquet_files_are_read(tmp_path):
    path = tmp_path / "long.csv"
    path.write_text("llm;item;correct\na;q1;1\nb;q2;0\n")
    assert load_responses(path, item_metadata=META).n_observed == 2
    frame = pd.DataFrame({"llm": ["a", "b"], "item": ["q1", "q2"], "correct": [1, 0]})
    frame.to_parquet(tmp_path / "long.PARQUET")
    assert load_responses(tmp_path / "long.PARQUET", item_metadata=META).n_observed == 2


def test_a_wide_file_with_only_an_id_column_is_explained(tmp_path):
    path = tmp_path / "wide.csv"
    path.write_text("llm\na\nb\n")
    with pytest.raises(ResponseDataError, match="no score columns besides the LLM-id column 'llm'"):
        load_responses(path, format="wide", benchmark="X")


def test_non_utf8_table_names_the_byte_and_line(tmp_path):
    path = tmp_path / "long.csv"
    path.write_bytes(b"llm,item,correct\na,q1,1\nb\xe9,q2,0\n")
    with pytest.raises(ResponseDataError, match=r"not UTF-8 text: byte 25 \(line 3\)"):
        load_responses(path, item_metadata=META)


def test_a_single_llm_cannot_be_fitted_and_says_why():
    from .conftest import make_matrix

    one = make_matrix([[1, 0, 1, 1]])
    with pytest.raises(ValueError, match=r"1 LLM\(s\) cannot identify 2 dimension\(s\)"):
        fit_posterior(one, 2, method="map", progressbar=False)


def test_llm_metadata_for_unknown_llms_and_llms_without_metadata_are_named():
    table = pd.DataFrame({"llm": ["a", "a", "b"], "item": ["q1", "q2", "q1"], "correct": [1, 0, 1]})
    meta = pd.DataFrame({"llm": ["a", "zz"], "family": ["llama", "qwen"]})
    with pytest.raises(ResponseDataError) as info:
        load_responses(table, item_metadata=META, llm_metadata=meta)
    assert "LLMs not in the responses: 'zz'" in problems(info) and "LLM(s) without metadata: 'b'" in problems(
        info
    )
    good = pd.DataFrame({"llm": ["a", "b"], "family": ["llama", "qwen"]})
    m = load_responses(table, item_metadata=META, llm_metadata=good)
    assert m.llm_coords == ["family"] and m.data["family"].sel(llm="b").item() == "qwen"


# ----------------------------------------------------------------- specs
def test_a_misspelled_benchmark_in_a_confirmatory_pattern_is_named(tiny_sim):
    spec = load_spec("confirmatory_safety_reasoning")
    pattern = dict(spec.pattern)
    pattern["HarmBnech"] = pattern.pop("HarmBench")
    bad = spec.with_overrides({"confirmatory": {"pattern": pattern}})
    with pytest.raises(ValueError, match=r"'HarmBnech' \(did you mean 'HarmBench'\?\)"):
        fit_posterior(tiny_sim.responses, 2, method="map", spec=bad, progressbar=False)


@pytest.mark.parametrize("value", [float("nan"), float("inf"), 1e308, 10**400, -1.0])
def test_non_finite_absurd_and_overflowing_prior_scales_are_named(value):
    with pytest.raises(ValueError, match=r"ability\.sigma = .* (finite|absurdly|too large|positive)"):
        load_spec({"ability": {"sigma": value}})


# ------------------------------------------------------------------- CLI
def test_cli_checks_the_output_before_any_work(tmp_path, capsys):
    data = tmp_path / "sim.nc"
    assert main(["simulate", "--scale", "0.002", "--llms", "20", "--out", str(data)]) == 0
    blocker = tmp_path / "afile"
    blocker.write_text("not a folder")
    assert main(["fit", str(data), "--out", str(blocker / "f.nc")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "afile is a file" in err and "Traceback" not in err
    assert main(["cv", str(data), "--out", "/proc/x.csv", "--serial"]) == 2
    assert "cannot write in /proc" in capsys.readouterr().err
    assert main(["fit", str(data), "--out", str(tmp_path / "fit.txt")]) == 2
    assert "use a file ending in .nc or .zarr" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["fit", "DATA", "--dims", "0", "--out", "f.nc"], "argument --dims: must be at least 1"),
        (["select", "FIT", "--fraction", "1.5", "--out", "s.json"], "argument --fraction: must be in (0, 1]"),
        (["cv", "DATA", "--folds", "1", "--out", "cv.csv"], "argument --folds: must be at least 2"),
        (["fit", "DATA", "--draws", "many", "--out", "f.nc"], "argument --draws: expected a whole number"),
    ],
)
def test_cli_bad_numbers_are_usage_errors_without_traceback(args, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(args)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_cli_missing_input_and_bad_pairs(tmp_path, capsys):
    assert main(["info", str(tmp_path / "nope.csv")]) == 2
    assert "data not found" in capsys.readouterr().err
    path = tmp_path / "long.csv"
    path.write_text("llm,item,correct,benchmark\na,q1,1,B\n")
    assert main(["info", str(path), "--metric", "acc", "gsm8k"]) == 2
    assert "expected one name or KEY=VALUE pairs" in capsys.readouterr().err


def test_cli_version(capsys):
    from benchmirt_bayes import __version__

    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0 and capsys.readouterr().out.strip() == f"benchmirt_bayes {__version__}"
