"""Bad inputs, round two (issue #43): each case either reads right or is one error naming the culprit.

Every case is written from its description in the issue (its id in the first column: R rows
are files, F formats, A analyses) and checked before any fitting.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from benchmirt_bayes import ResponseDataError, load_responses

WIDE = {"format": "wide", "llm_col": "model", "benchmark": "B"}

REFUSED_TABLES = [
    # (case, what happens, file text, words the error must contain)
    (
        "R34",
        "an empty header cell is not invented as an id 'Unnamed: 2'",
        "model,q1,,q3\nA,1,0,1\nB,0,1,0\n",  # (only the first column, an index, may be unnamed)
        ["empty column name", "column(s) 3"],
    ),
    (
        "R35",
        "a row with more fields than the header is not shifted into the ids",
        "model,q1,q2\nA,1,0,1\nB,0,1\n",
        ["line 2 has 4", "header's 3 fields"],
    ),
    (
        "R35b",
        "one long row in the middle names its line",
        "model,q1,q2\nA,1,0\nB,0,1,1\nC,1,1\n",
        ["line 3 has 4"],
    ),
    (
        "R36",
        "a short row does not drop its last cell silently",
        "model,q1,q2,q3\nA,1,0,1\nB,0,1\nC,1,1,0\n",
        ["line 3 has 3", "header's 4 fields"],
    ),
    (
        "R36b",
        "a trailing delimiter on some rows only is named, not dropped",
        "model,q1,q2\nA,1,0,\nB,0,1\n",
        ["line 2 has 4"],
    ),
]


@pytest.mark.parametrize(
    ("case", "what", "text", "words"), REFUSED_TABLES, ids=[row[0] for row in REFUSED_TABLES]
)
def test_malformed_tables_are_one_error_naming_the_line(tmp_path, case, what, text, words):
    path = tmp_path / f"{case}.csv"
    path.write_text(text)
    with pytest.raises(ResponseDataError) as info:
        load_responses(path, **WIDE)
    message = str(info.value)
    assert path.name in message, what
    for word in words:
        assert word in message, f"{case} ({what}): {word!r} not in {message!r}"


@pytest.mark.parametrize(
    "text",
    [
        "model,q1,q2,q3\nA,1,0,1,\nB,0,1,0,\nC,1,1,0,\n",  # R37: the data rows end with a comma
        "model,q1,q2,q3,\nA,1,0,1,\nB,0,1,0,\nC,1,1,0,\n",  # every line does
        "model,q1,q2,q3\n\nA,1,0,1\nB,0,1,0\n\nC,1,1,0\n\n",  # blank lines
    ],
    ids=["R37-data-rows", "R37-every-line", "blank-lines"],
)
def test_a_delimiter_closing_every_row_is_read_as_the_plain_table(tmp_path, text):
    path = tmp_path / "trailing.csv"
    path.write_text(text)
    m = load_responses(path, **WIDE)
    assert list(m.llms) == ["A", "B", "C"] and list(m.items) == ["q1", "q2", "q3"]
    np.testing.assert_array_equal(m.values, [[1, 0, 1], [0, 1, 0], [1, 1, 0]])


def test_quoted_delimiters_and_line_breaks_stay_inside_their_cell(tmp_path):
    path = tmp_path / "quoted.csv"
    path.write_text('model,"q,1","q\n2"\n"org/a, v2",1,0\nB,0,1\n')
    m = load_responses(path, **WIDE)
    assert list(m.llms) == ["org/a, v2", "B"] and list(m.items) == ["q,1", "q\n2"]


RESPONSES = "model,q1,q2,q3\nA,1,0,1\nB,0,1,0\nC,1,1,0\n"


def _with_metadata(folder, **kwargs):
    """``r.csv`` (LLMs as rows) with the item metadata ``meta.csv`` of ``folder``."""
    return load_responses(
        folder / "r.csv", format="wide", llm_col="model", item_metadata=folder / "meta.csv", **kwargs
    )


def test_r44_an_empty_benchmark_cell_is_named_not_a_benchmark_called_empty(tmp_path):
    (tmp_path / "r.csv").write_text(RESPONSES)
    (tmp_path / "meta.csv").write_text("item,benchmark\nq1,X\nq2,\nq3,  \n")
    with pytest.raises(ResponseDataError) as info:
        _with_metadata(tmp_path)
    assert "2 item(s) with an empty benchmark cell" in str(info.value)
    assert "'q2'" in str(info.value) and "'q3'" in str(info.value)
    filled = _with_metadata(tmp_path, benchmark="Y")
    assert filled.item_metadata()["benchmark"].tolist() == ["X", "Y", "Y"]


def test_r48_an_empty_subgroup_cell_is_its_benchmark_not_a_subgroup_called_empty(tmp_path):
    (tmp_path / "r.csv").write_text(RESPONSES)
    (tmp_path / "meta.csv").write_text("item,benchmark,subgroup\nq1,X,\nq2,X,s\nq3,Y,\n")
    m = _with_metadata(tmp_path)
    assert m.item_metadata()["subgroup"].tolist() == ["X", "s", "Y"]
    assert "" not in set(m.item_metadata()["benchmark"])


def test_empty_metadata_cells_from_a_dataframe_are_missing_too():
    table = pd.DataFrame({"model": ["A", "B"], "q1": [1, 0], "q2": [0, 1]})
    meta = pd.DataFrame(
        {"item": ["q1", "q2"], "benchmark": pd.Series(["X", "X"], dtype="str"), "subgroup": ["", "s"]}
    )
    m = load_responses(table, format="wide", llm_col="model", item_metadata=meta)
    assert m.item_metadata()["subgroup"].tolist() == ["X", "s"]


def _pyirt(tmp_path, lines: list[str]):
    path = tmp_path / "responses.jsonlines"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_f23_a_repeated_key_in_a_pyirt_line_is_named(tmp_path):
    path = _pyirt(
        tmp_path,
        [
            '{"subject_id": "a", "responses": {"q1": 1, "q2": 0}}',
            '{"subject_id": "b", "responses": {"q1": 0, "q1": 1, "q2": 1}}',
        ],
    )
    with pytest.raises(ResponseDataError) as info:
        load_responses(path, format="pyirt", benchmark="B")
    assert "line 2" in str(info.value) and "'q1'" in str(info.value) and "repeat" in str(info.value)


@pytest.mark.parametrize("subject", ["null", '""', "3"])
def test_f24_a_missing_or_non_text_subject_id_is_named(tmp_path, subject):
    path = _pyirt(
        tmp_path,
        [
            '{"subject_id": "a", "responses": {"q1": 1, "q2": 0}}',
            '{"subject_id": ' + subject + ', "responses": {"q1": 0, "q2": 1}}',
        ],
    )
    if subject == "3":  # a number is an id as written, like a CSV id
        assert sorted(load_responses(path, format="pyirt", benchmark="B").llms) == ["3", "a"]
        return
    with pytest.raises(ResponseDataError) as info:
        load_responses(path, format="pyirt", benchmark="B")
    assert "line 2" in str(info.value) and "subject_id" in str(info.value)


def test_pyirt_lines_are_read_under_any_extension(tmp_path):
    lines = [
        json.dumps({"subject_id": s, "responses": {"q1": v, "q2": 1 - v}}) for s, v in (("a", 1), ("b", 0))
    ]
    for name in ("r.jsonlines", "r.jsonl", "r.txt"):
        path = tmp_path / name
        path.write_text("\n".join(lines) + "\n")
        m = load_responses(path, format="pyirt", benchmark="B")
        assert sorted(m.llms) == ["a", "b"]


def test_pyirt_lines_are_recognised_by_extension_and_other_json_is_refused_by_name(tmp_path):
    line = json.dumps({"subject_id": "a", "responses": {"q1": 1, "q2": 0}})
    other = json.dumps({"subject_id": "b", "responses": {"q1": 0, "q2": 1}})
    for name in ("r.jsonlines", "r.jsonl", "r.json"):
        (tmp_path / name).write_text(line + "\n" + other + "\n")
        assert sorted(load_responses(tmp_path / name, benchmark="B").llms) == ["a", "b"]
    other = tmp_path / "results.json"
    other.write_text(json.dumps({"results": {"arc_easy": {"acc,none": 0.5}}}, indent=2))
    with pytest.raises(ResponseDataError, match=r"results\.json is a JSON document, not py-irt JSON lines"):
        load_responses(other, benchmark="B")
    empty_log = tmp_path / "log.json"  # an Inspect log written without its samples
    empty_log.write_text(json.dumps({"version": 2, "eval": {"task": "t", "model": "m"}, "samples": []}))
    with pytest.raises(ResponseDataError, match=r"task 't': the log holds no samples"):
        load_responses(empty_log)
    (tmp_path / "r.ndjson").write_text(line + "\n")
    with pytest.raises(ResponseDataError, match="format='pyirt'"):
        load_responses(tmp_path / "r.ndjson", benchmark="B")


GRADED = "model,q1,q2,q3\nA,1,0,3\nB,0,1,2\nC,1,2,0\n"


@pytest.mark.parametrize(
    ("column", "cell", "words"),
    [
        ("n_categories", "ten", ["n_categories must be a number", "'q2': 'ten'"]),  # R20
        ("n_categories", "2.5", ["whole number ≥ 2", "'q2'"]),
        ("n_trials", "five", ["n_trials must be a number", "'q2': 'five'"]),  # R21
    ],
)
def test_r20_r21_item_metadata_that_is_not_a_number_names_item_and_cell(tmp_path, column, cell, words):
    kind = "graded" if column == "n_categories" else "count"
    other = "4" if kind == "graded" else "3"
    (tmp_path / "r.csv").write_text(GRADED)
    (tmp_path / "meta.csv").write_text(
        f"item,benchmark,response_type,{column}\nq1,B,{kind},{other}\nq2,B,{kind},{cell}\nq3,B,{kind},{other}\n"
    )
    with pytest.raises(ResponseDataError) as info:
        _with_metadata(tmp_path)
    for word in words:
        assert word in str(info.value)


@pytest.mark.parametrize("cell", ["", "NA", " "])
def test_r49_an_empty_n_categories_cell_takes_the_documented_default(tmp_path, cell):
    (tmp_path / "r.csv").write_text(GRADED)
    (tmp_path / "meta.csv").write_text(
        f"item,benchmark,response_type,n_categories\nq1,B,graded,3\nq2,B,graded,{cell}\nq3,B,graded,5\n"
    )
    m = _with_metadata(tmp_path)
    assert m.n_categories.tolist() == [3, 3, 5]  # q2's largest value is 2: 2 + 1 categories


def test_r14_r16_every_graded_value_outside_its_categories_is_listed_as_a_value(tmp_path):
    (tmp_path / "r.csv").write_text("model,q1,q2,q3\nA,1,0,2.5\nB,0,-1,2\nC,1,2,0\n")
    (tmp_path / "meta.csv").write_text(
        "item,benchmark,response_type\nq1,B,graded\nq2,B,graded\nq3,B,graded\n"
    )
    with pytest.raises(ResponseDataError) as info:
        _with_metadata(tmp_path)
    message = str(info.value)
    assert "2 value(s) outside their item's response type" in message
    assert "(A, q3: graded" in message and "=2.5" in message
    assert "(B, q2: graded" in message and "=-1.0" in message
    assert "n_categories" not in message


# ------------------------------------------------------------- stored fits
def test_p13_save_posterior_never_replaces_what_is_not_a_fit(map_fit, tiny_sim, tmp_path):
    from benchmirt_bayes import PosteriorFileError, save_posterior

    folder = tmp_path / "mydata.zarr"
    folder.mkdir()
    (folder / "notes.txt").write_text("mine")
    data = tmp_path / "data.nc"
    tiny_sim.responses.to_netcdf(str(data))
    before = data.read_bytes()
    for path in (folder, data):
        with pytest.raises(PosteriorFileError, match="not a fit written by benchmirt_bayes"):
            save_posterior(map_fit, path)
    assert (folder / "notes.txt").read_text() == "mine" and data.read_bytes() == before
    for name in ("fit.nc", "fit.zarr"):  # an earlier fit is replaced
        save_posterior(map_fit, save_posterior(map_fit, tmp_path / name))


def test_p07_a_fit_whose_checksum_was_removed_is_refused_not_warned_about(map_fit, tmp_path):
    import h5netcdf

    from benchmirt_bayes import PosteriorFileError, load_posterior, save_posterior
    from benchmirt_bayes.integrity import CHECKSUM_ATTR

    path = save_posterior(map_fit, tmp_path / "fit.nc")
    with h5netcdf.File(path, "a") as handle:
        del handle.attrs[CHECKSUM_ATTR]
    with pytest.raises(PosteriorFileError, match="carries no checksum"):
        load_posterior(path)


# ------------------------------------------------------------- the command line
@pytest.fixture
def cli_files(map_fit, tiny_sim, tmp_path):
    from benchmirt_bayes import save_posterior

    data = tmp_path / "data.nc"
    tiny_sim.responses.to_netcdf(str(data))
    fit = save_posterior(map_fit, tmp_path / "fit.nc")
    return tmp_path, data, fit


def _cli(capsys, *args) -> tuple[int, str]:
    from benchmirt_bayes.cli import main

    code = main([str(a) for a in args])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def test_c11_an_output_is_never_an_input(cli_files, capsys):
    _folder, data, fit = cli_files
    before = data.read_bytes()
    code, text = _cli(capsys, "fit", data, "--method", "map", "--out", data, "--overwrite")
    assert code == 2 and "is the input data" in text and "fitting" not in text
    assert data.read_bytes() == before
    code, text = _cli(capsys, "audit", fit, "--out", fit)
    assert code == 2 and "is the input fit" in text


def test_existing_outputs_are_replaced_only_if_ours_or_with_overwrite(cli_files, capsys):
    folder, _, fit = cli_files
    out = folder / "ranking.csv"
    assert _cli(capsys, "rank", fit, "--out", out)[0] == 0
    code, text = _cli(capsys, "rank", fit, "--out", out)
    assert code == 2 and "exists and is a file" in text and "--overwrite" in text
    assert _cli(capsys, "rank", fit, "--out", out, "--overwrite")[0] == 0
    theirs = folder / "theirs"
    theirs.mkdir()
    (theirs / "notes.txt").write_text("mine")
    code, text = _cli(capsys, "report", fit, "--out", theirs)
    assert code == 2 and "folder with files benchmirt did not write" in text
    assert _cli(capsys, "report", fit, "--out", theirs, "--overwrite")[0] == 0
    assert (theirs / "notes.txt").read_text() == "mine" and (theirs / "index.html").exists()
    ours = folder / "report"
    for _ in range(2):  # a report folder it wrote is simply rewritten
        assert _cli(capsys, "report", fit, "--out", ours)[0] == 0
    assert not list(folder.glob(".*partial*"))


@pytest.mark.parametrize("error", [OSError(28, "No space left on device"), KeyboardInterrupt()])
def test_c33_c34_a_failed_write_leaves_nothing_at_the_output_path(tmp_path, error):
    from benchmirt_bayes.cli import write_file_atomically, write_folder_atomically

    def half_then_fail(partial):
        Path(partial).write_text("llm,item\na,")
        raise error

    with pytest.raises(type(error)):
        write_file_atomically(tmp_path / "rank_full.csv", half_then_fail)
    report = tmp_path / "report"
    with pytest.raises(type(error)):
        write_folder_atomically(report, lambda folder: half_then_fail(folder / "index.html"))
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_c09_c04b_c25_c31_bad_numbers_and_options_are_refused_before_any_work(cli_files, capsys):
    folder, data, _fit = cli_files
    with pytest.raises(SystemExit) as exit_info:
        _cli(capsys, "fit", data, "--seed", "-1", "--out", folder / "f.nc")
    assert exit_info.value.code == 2 and "--seed: must be 0 or more" in capsys.readouterr().err
    code, text = _cli(capsys, "fit", data, "--dims", "500", "--method", "map", "--out", folder / "f.nc")
    assert code == 2 and "needs more items than dimensions" in text and "Minimizing" not in text
    code, text = _cli(
        capsys, "cv", data, "--folds", "500", "--scheme", "llms", "--dims", "1", "--out", folder / "cv.csv"
    )
    assert code == 2 and "500 folds need at least 500 llms" in text and "fits done" not in text
    code, text = _cli(capsys, "info", data, "--response-type", "graded", "--format", "wide")
    assert code == 2 and "--format, --response-type read tables and result folders" in text


def test_c28_c30_link_inputs_name_the_file_and_cell(cli_files, capsys):
    folder, _, fit = cli_files
    scores = folder / "scores.csv"
    scores.write_text("llm,b1\nm0,0.5\nm1,ten\n")
    code, text = _cli(capsys, "link", fit, "--full-scores", scores, "--out", folder / "linked.nc")
    assert code == 2 and "scores.csv" in text and "'m1' / 'b1': 'ten'" in text
    scores.write_text("llm,b1\nm0,0.5\n")
    for name, content in (("no_key.json", '{"items": ["q1"]}'), ("cut.json", '{"benchmarks": {"b1": ["q1"')):
        (folder / name).write_text(content)
        code, text = _cli(
            capsys, "link", fit, "--full-scores", scores, "--items", folder / name, "--out", folder / "l.nc"
        )
        assert code == 2 and name in text, text


def test_s05_names_with_dollar_signs_are_shown_not_parsed_as_mathtext(tmp_path):
    import matplotlib.pyplot as plt

    from benchmirt_bayes.reports.plots import plot_benchmark_heatmap

    table = pd.DataFrame(
        {
            "group": ["cost_$5_and_$10", "x^2_$a$"],
            "dimension": ["dim_1", "dim_1"],
            "r_mean": [0.1, 0.3],
            "r_lower": [0.0, 0.2],
            "r_upper": [0.2, 0.4],
        }
    )
    fig = plot_benchmark_heatmap(table)
    fig.savefig(tmp_path / "heatmap.png")  # mathtext would fail to parse "$5_and_$"
    labels = [label.get_text() for label in fig.axes[0].get_yticklabels()]
    plt.close(fig)
    assert labels == [r"cost_\$5_and_\$10", r"x^2_\$a\$"]  # escaped: drawn as written


# ------------------------------------------------------------- analyses
def test_a03_an_answer_off_its_items_scale_is_named_with_its_llm(map_fit, tiny_sim):
    from benchmirt_bayes import estimate_scores, score_llm

    item = str(tiny_sim.responses.items[0])
    answers = pd.DataFrame({item: [3.0, 1.0]}, index=["new-a", "new-b"])
    with pytest.raises(ValueError, match=rf"outside their items' response types: \{{'new-a: {item} "):
        estimate_scores(map_fit, answers, n_draws=5)
    with pytest.raises(ValueError, match="outside their items' response types"):
        score_llm(map_fit, {item: 3})


def test_s05_literal_text_restores_only_the_setting_it_changes():
    import matplotlib as mpl
    import matplotlib.pyplot as plt

    from benchmirt_bayes.reports.plots import literal_text

    before = mpl.rcParams["interactive"]

    @literal_text
    def draws_first_figure():
        mpl.rcParams["interactive"] = not before  # as a backend's first switch does in Jupyter
        return plt.figure()

    try:
        plt.close(draws_first_figure())
        assert mpl.rcParams["interactive"] is (not before)  # kept: inline display goes on
        assert mpl.rcParams["text.parse_math"] is True
    finally:
        mpl.rcParams["interactive"] = before
