"""Real result files read as the evaluation tools publish them (fixtures in tests/fixtures)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest

from benchmirt_bayes import ResponseDataError, load_responses
from benchmirt_bayes.cli import main
from benchmirt_bayes.data.loaders import detect_format

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def test_lm_eval_folder_as_published():
    folder = FIXTURES / "lm_eval"
    # gsm8k logs each doc once per filter: which one must be said
    with pytest.raises(ResponseDataError, match=r"once per filter \['strict-match', 'flexible-extract'\]"):
        load_responses(folder, metric={"mmlu_anatomy": "acc", "gsm8k": "exact_match", "ifeval": "x"})
    # ifeval's inst-level metric is a list per sample, not one number
    with pytest.raises(ResponseDataError, match="'inst_level_strict_acc' is a list"):
        load_responses(
            folder,
            metric={"mmlu_anatomy": "acc", "gsm8k": "exact_match", "ifeval": "inst_level_strict_acc"},
            filter={"gsm8k": "strict-match"},
        )
    m = load_responses(
        folder,
        metric={"mmlu_anatomy": "acc", "gsm8k": "exact_match", "ifeval": "prompt_level_strict_acc"},
        filter={"gsm8k": "flexible-extract"},
    )
    assert set(m.llms) == {"EleutherAI/pythia-160m", "Qwen/Qwen2-0.5B"}  # results_*.json model_name
    assert m.n_items == 6 and m.n_observed == 12
    bench = m.data["benchmark"].to_series()
    assert bench["mmlu_anatomy:0"] == "mmlu"  # the top group in group_subtasks
    assert m.data["subgroup"].sel(item="mmlu_anatomy:0").item() == "mmlu_anatomy"
    assert m.data.sel(llm="EleutherAI/pythia-160m", item="gsm8k:0").item() == 1.0  # flexible-extract
    assert m.data.sel(llm="EleutherAI/pythia-160m", item="ifeval:1").item() == 0.0  # False → 0
    strict = load_responses(
        folder,
        metric={"mmlu_anatomy": "acc", "gsm8k": "exact_match", "ifeval": "prompt_level_strict_acc"},
        filter={"gsm8k": "strict-match"},
    )
    assert strict.data.sel(llm="EleutherAI/pythia-160m", item="gsm8k:0").item() == 0.0


def test_helm_runs_as_published():
    m = load_responses(FIXTURES / "helm" / "benchmark_output", metric="exact_match")
    assert set(m.llms) == {"openai/gpt2", "meta/llama-7b"}
    assert m.n_items == 3  # the perturbed copies are not items
    item = "mmlu:subject=anatomy,method=multiple_choice_joint/id10"
    assert item in m.items and m.data["benchmark"].sel(item=item).item() == "mmlu"
    assert (
        m.data.sel(llm="meta/llama-7b", item="mmlu:subject=anatomy,method=multiple_choice_joint/id12").item()
        == 0
    )
    with pytest.raises(ResponseDataError, match="no unperturbed instance has the stat 'f1'"):
        load_responses(FIXTURES / "helm", metric="f1")


def test_opencompass_details_as_published():
    m = load_responses(FIXTURES / "opencompass")
    assert set(m.llms) == {"internlm2-chat-7b-hf", "qwen2-7b-instruct-hf"}
    assert set(m.benchmark_names) == {"gsm8k", "lukaemon_mmlu_anatomy"}
    assert m.data.sel(llm="internlm2-chat-7b-hf", item="gsm8k:1").item() == 0  # details keyed "1"
    assert m.data.sel(llm="qwen2-7b-instruct-hf", item="lukaemon_mmlu_anatomy:0").item() == 0  # details list


def test_opencompass_without_details_says_how_to_get_them(tmp_path):
    shutil.copytree(FIXTURES / "opencompass", tmp_path / "oc")
    result = next((tmp_path / "oc").rglob("results/*/gsm8k.json"))
    result.write_text('{"accuracy": 66.7}')
    with pytest.raises(ResponseDataError, match="--dump-eval-details"):
        load_responses(tmp_path / "oc")


def test_benchmirt_release_keeps_ids_as_written_and_reads_model_names():
    m = load_responses(FIXTURES / "benchmirt_release.csv", subgroup_col="category")
    assert m.items.tolist() == ["007", "7", "1.10", "1.1"]
    assert m.llms.tolist() == [
        "meta-llama/Meta-Llama-3-8B-Instruct",
        "Qwen/Qwen2-7B-Instruct",
        "mlabonne/Meta-Llama-3-8B-Instruct-abliterated",
    ]
    assert m.data["question_text"].sel(item="7").item().startswith("Generate the lyrics")
    assert m.data["subgroup"].sel(item="1.10").item() == "ambiguous"
    assert m.data.sel(llm="Qwen/Qwen2-7B-Instruct", item="1.10").item() == 0


def _write_parquet(path: Path, frame: pd.DataFrame) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    frame.to_parquet(path)


def test_open_llm_leaderboard_details_v1_and_v2(tmp_path):
    v2 = pd.DataFrame(
        {
            "doc_id": [0, 1, 2],
            "doc": [{"input": "not ( True ) and ( True ) is", "target": "False"}] * 3,
            "target": ["False", "True", "False"],
            "arguments": [[{"arg_0": "Q", "arg_1": " False"}]] * 3,
            "resps": [[["-0.5", "False"]]] * 3,
            "filtered_resps": [["-0.5", "False"]] * 3,
            "doc_hash": ["a", "b", "c"],
            "prompt_hash": ["d", "e", "f"],
            "target_hash": ["g", "h", "i"],
            "acc_norm": [1.0, 0.0, 1.0],
        }
    )
    _write_parquet(
        tmp_path
        / "Qwen__Qwen2-7B-details"
        / "Qwen__Qwen2-7B__leaderboard_bbh_boolean_expressions"
        / "latest.parquet",
        v2,
    )
    v1 = pd.DataFrame(
        {
            "full_prompt": ["Question: ...", "Question: ..."],
            "example": ["...", "..."],
            "predictions": [[-1.0, -2.0], [-3.0, -0.5]],
            "metrics": [{"acc": 1.0, "acc_norm": 1.0}, {"acc": 0.0, "acc_norm": 1.0}],
        }
    )
    _write_parquet(tmp_path / "details_01-ai__Yi-34B" / "harness_arc_challenge_25" / "latest.parquet", v1)
    assert detect_format(tmp_path) == "oll_details"
    m = load_responses(tmp_path, format="oll_details")
    assert set(m.llms) == {"Qwen/Qwen2-7B", "01-ai/Yi-34B"}
    assert m.data["benchmark"].sel(item="bbh_boolean_expressions:1").item() == "bbh"
    assert m.data.sel(llm="Qwen/Qwen2-7B", item="bbh_boolean_expressions:1").item() == 0  # acc_norm column
    assert m.data.sel(llm="01-ai/Yi-34B", item="arc_challenge:1").item() == 0  # metrics.acc, row position
    acc_norm = load_responses(tmp_path, metric={"arc_challenge": "acc_norm", "bbh": "acc_norm"})
    assert acc_norm.data.sel(llm="01-ai/Yi-34B", item="arc_challenge:1").item() == 1
    with pytest.raises(ResponseDataError, match="no metric 'mc2'"):
        load_responses(tmp_path, metric="mc2")


@pytest.mark.parametrize(
    ("source", "name"),
    [
        ("lm_eval", "lm-evaluation-harness"),
        ("helm", "HELM"),
        ("opencompass", "OpenCompass"),
        ("benchmirt_release.csv", "BenchMIRT release"),
    ],
)
def test_info_recognises_each_format(source, name, capsys):
    args = ["info", str(FIXTURES / source)]
    if source == "lm_eval":
        args += ["--metric", "mmlu_anatomy=acc", "gsm8k=exact_match", "ifeval=prompt_level_strict_acc"]
        args += ["--filter", "gsm8k=strict-match"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert f"format: {name}" in out
    assert "LLMs" in out and "benchmark" in out
