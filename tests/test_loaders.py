import gzip
import json

import numpy as np
import pandas as pd
import pytest

from benchmirt_bayes import ResponseDataError, load_responses

LONG = pd.DataFrame(
    {
        "llm": ["a", "a", "b", "b", "c"],
        "item": ["q1", "q2", "q1", "q2", "q1"],
        "correct": [1, 0, 0, 1, 1],
    }
)
META = pd.DataFrame(
    {
        "item": ["q1", "q2"],
        "benchmark": ["MATH", "BBQ"],
        "subgroup": ["MATH", "ambiguous"],
        "category": ["reasoning", "safety"],
    }
)


def problems_of(excinfo):
    return "\n".join(excinfo.value.problems)


def test_long_dataframe_with_metadata():
    m = load_responses(LONG, item_metadata=META)
    assert (m.n_llms, m.n_items, m.n_observed) == (3, 2, 5)
    assert m.data["category"].values.tolist() == ["reasoning", "safety"]
    assert np.isnan(m.data.sel(llm="c", item="q2").item())


def test_long_csv_parquet_and_custom_columns(tmp_path):
    renamed = LONG.rename(columns={"llm": "model", "item": "question", "correct": "score"})
    renamed.to_csv(tmp_path / "r.csv", index=False)
    META.rename(columns={"item": "question"}).to_csv(tmp_path / "meta.csv", index=False)
    kwargs = {"llm_col": "model", "item_col": "question", "correct_col": "score", "format": "long"}
    from_csv = load_responses(tmp_path / "r.csv", item_metadata=tmp_path / "meta.csv", **kwargs)
    renamed.to_parquet(tmp_path / "r.parquet")
    from_parquet = load_responses(tmp_path / "r.parquet", item_metadata=tmp_path / "meta.csv", **kwargs)
    assert from_csv == from_parquet == load_responses(LONG, item_metadata=META)


def test_long_table_carrying_its_own_metadata_columns():
    table = LONG.merge(META, on="item")
    m = load_responses(table)
    assert m.data["subgroup"].sel(item="q2").item() == "ambiguous"


def test_wide_llms_as_rows(tmp_path):
    wide = pd.DataFrame({"llm": ["a", "b"], "q1": [1, 0], "q2": [0, np.nan]})
    wide.to_csv(tmp_path / "w.csv.gz", index=False, compression="gzip")
    m = load_responses(tmp_path / "w.csv.gz", format="wide", item_metadata=META)
    assert m.n_observed == 3 and m.llms.tolist() == ["a", "b"]


def test_wide_items_as_rows_benchmirt_release_layout(tmp_path):
    release = pd.DataFrame(
        {
            "question_id": ["x1", "x2", "x3"],
            "benchmark": ["HarmBench", "HarmBench", "MATH"],
            "category": ["standard", "copyright", "math"],
            "subcategory_one": ["chem", "lyrics", None],
            "subcategory_two": [None, None, None],
            "subcategory_three": [None, None, None],
            "llama-3-8b": [1, 0, 1],
            "qwen-2-7b": [0, 0, 1],
        }
    )
    release.to_csv(tmp_path / "release.csv", index=False)
    m = load_responses(tmp_path / "release.csv", subgroup_col="category")  # auto-detected
    assert m.llms.tolist() == ["llama-3-8b", "qwen-2-7b"]
    assert m.data["subgroup"].values.tolist() == ["standard", "copyright", "math"]
    assert m.data["subcategory_one"].sel(item="x2").item() == "lyrics"
    assert m.data.sel(llm="qwen-2-7b", item="x3").item() == 1


def test_pyirt_jsonlines(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text(
        "\n".join(
            json.dumps(r)
            for r in [
                {"subject_id": "a", "responses": {"q1": 1, "q2": 0}},
                {"subject_id": "b", "responses": {"q1": 0}},
            ]
        )
    )
    m = load_responses(path, item_metadata=META)
    assert m.n_observed == 3 and m.data.sel(llm="a", item="q1").item() == 1


def write_lm_eval(folder, model, task, rows, stamp="2024-06-01T10-00-00.123456"):
    model_dir = folder / model
    model_dir.mkdir(parents=True, exist_ok=True)
    path = model_dir / f"samples_{task}_{stamp}.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows))


def test_lm_eval_harness_sample_logs(tmp_path):
    write_lm_eval(
        tmp_path,
        "org__model-a",
        "arc_easy",
        [{"doc_id": 0, "acc": 1.0, "acc_norm": 1.0}, {"doc_id": 1, "acc": 0.0}],
    )
    write_lm_eval(
        tmp_path, "org__model-b", "arc_easy", [{"doc_id": 0, "acc": 0.0}, {"doc_id": 1, "acc": 1.0}]
    )
    write_lm_eval(tmp_path, "org__model-b", "gsm8k", [{"doc_id": 0, "exact_match": 1.0}])
    with pytest.raises(ResponseDataError, match="metric=") as info:
        load_responses(tmp_path, metric="acc")
    assert "no metric 'acc'" in str(info.value)
    m = load_responses(tmp_path, metric={"arc_easy": "acc", "gsm8k": "exact_match"})
    assert set(m.items) == {"arc_easy:0", "arc_easy:1", "gsm8k:0"}
    assert m.data.sel(llm="org__model-a", item="arc_easy:0").item() == 1
    assert np.isnan(m.data.sel(llm="org__model-a", item="gsm8k:0").item())
    assert m.data["benchmark"].sel(item="gsm8k:0").item() == "gsm8k"


def test_lm_eval_newest_log_wins(tmp_path):
    write_lm_eval(tmp_path, "m", "t", [{"doc_id": 0, "acc": 0.0}], stamp="2024-01-01T00-00-00.1")
    write_lm_eval(tmp_path, "m", "t", [{"doc_id": 0, "acc": 1.0}], stamp="2024-02-01T00-00-00.1")
    assert load_responses(tmp_path).values.item() == 1.0


def test_lm_eval_missing_metric_is_reported(tmp_path):
    write_lm_eval(tmp_path, "m", "t", [{"doc_id": 0, "acc": 1.0}, {"doc_id": 1, "f1": 0.3}])
    with pytest.raises(ResponseDataError, match="no metric 'acc'"):
        load_responses(tmp_path)


def test_continuous_scores_need_an_explicit_rule():
    table = LONG.assign(correct=[0.9, 0.2, 0.5, 0.49, 1.0])
    with pytest.raises(ResponseDataError, match="binarize"):
        load_responses(table, item_metadata=META)
    m = load_responses(table, item_metadata=META, binarize=0.5)
    assert m.to_long()["correct"].tolist() == [1, 0, 1, 0, 1]


# ------------------------------------------------------------- bad inputs
def test_missing_file(tmp_path):
    with pytest.raises(ResponseDataError, match="file not found"):
        load_responses(tmp_path / "nope.csv")


def test_unreadable_format(tmp_path):
    path = tmp_path / "bad.csv.gz"
    path.write_bytes(b"\x00not gzip at all")
    with pytest.raises(ResponseDataError, match="could not read"):
        load_responses(path)


def test_empty_table(tmp_path):
    (tmp_path / "empty.csv").write_text("llm,item,correct\n")
    with pytest.raises(ResponseDataError, match="empty"):
        load_responses(tmp_path / "empty.csv")


def test_conflicting_duplicates_are_named():
    table = pd.concat([LONG, pd.DataFrame({"llm": ["a"], "item": ["q1"], "correct": [0]})])
    with pytest.raises(ResponseDataError, match=r"conflicting values: \(a, q1\)"):
        load_responses(table, item_metadata=META)


def test_identical_duplicates_are_harmless():
    table = pd.concat([LONG, LONG.iloc[:1]])
    assert load_responses(table, item_metadata=META).n_observed == 5


def test_values_outside_allowed_set_are_named():
    table = LONG.assign(correct=[1, 0, 2, 1, -1])
    with pytest.raises(ResponseDataError) as info:
        load_responses(table, item_metadata=META)
    text = problems_of(info)
    assert "2 value(s) outside {0, 1}" in text and "(b, q1)=2.0" in text


def test_non_numeric_values_are_named():
    table = LONG.assign(correct=["1", "yes", "0", "1", "oops"])
    with pytest.raises(ResponseDataError) as info:
        load_responses(table, item_metadata=META)
    assert "2 non-numeric value(s)" in problems_of(info) and "'yes'" in problems_of(info)


@pytest.mark.parametrize("response_type", [None, "continuous", "graded"])
def test_infinite_values_are_named_and_never_binarized_or_typed(response_type):
    """lm-evaluation-harness logs ``Infinity`` where a metric could not be computed."""
    table = LONG.assign(correct=[1, 0, np.inf, 1, -np.inf])
    options = {"binarize": 0.5} if response_type is None else {"response_type": response_type}
    with pytest.raises(ResponseDataError) as info:
        load_responses(table, item_metadata=META, **options)
    text = problems_of(info)
    assert "2 value(s) are infinite" in text and "=inf" in text and "=-inf" in text
    assert "categories" not in text and "outside" not in text  # no type check on an infinite cell


def test_items_without_metadata_and_metadata_without_items():
    meta = pd.DataFrame({"item": ["q1", "q9"], "benchmark": ["MATH", "MATH"]})
    with pytest.raises(ResponseDataError) as info:
        load_responses(LONG, item_metadata=meta)
    text = problems_of(info)
    assert "1 item(s) without metadata: 'q2'" in text
    assert "1 metadata row(s) for items not in the responses: 'q9'" in text


def test_no_metadata_at_all_says_what_to_do():
    with pytest.raises(ResponseDataError, match="benchmark='NAME'"):
        load_responses(LONG)


def test_llms_and_items_with_no_observation():
    wide = pd.DataFrame({"llm": ["a", "b"], "q1": [1, np.nan], "q2": [np.nan, np.nan]})
    with pytest.raises(ResponseDataError) as info:
        load_responses(wide, format="wide", item_metadata=META)
    text = problems_of(info)
    assert "LLMs with no observation at all: 'b'" in text
    assert "items with no observation at all: 'q2'" in text


def test_all_problems_are_reported_together():
    table = LONG.assign(correct=[1, "x", 3, 1, 1])
    meta = pd.DataFrame({"item": ["q1"], "benchmark": ["MATH"]})
    with pytest.raises(ResponseDataError) as info:
        load_responses(table, item_metadata=meta)
    text = problems_of(info)
    assert len(info.value.problems) == 3
    assert "non-numeric" in text and "outside {0, 1}" in text and "without metadata: 'q2'" in text


def test_bad_pyirt_line(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text('{"subject_id": "a", "responses": {"q1": 1}}\n{not json}\n')
    with pytest.raises(ResponseDataError, match="line 2"):
        load_responses(path, item_metadata=META)


def test_gzip_long_table(tmp_path):
    path = tmp_path / "long.csv.gz"
    with gzip.open(path, "wt") as handle:
        LONG.merge(META, on="item").to_csv(handle, index=False)
    assert load_responses(path).n_observed == 5
