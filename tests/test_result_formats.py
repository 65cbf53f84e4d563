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


HELM_SAFETY = FIXTURES / "helm_safety" / "benchmark_output" / "runs" / "v3"
HELM_SAFETY_METRICS = {"harm_bench": "harm_bench_score", "bbq": "exact_match"}


def _helm_stat_mean(run: Path, name: str) -> float:
    """The run's own aggregate of an unperturbed test stat, from its stats.json."""
    import json

    (mean,) = [
        s["mean"]
        for s in json.loads((run / "stats.json").read_text())
        if s["name"] == {"name": name, "split": "test"}
    ]
    return mean


def test_helm_safety_runs_as_published():
    """Real HELM Safety v3 runs: annotated instances are listed once per group of stats."""
    import json

    harm = HELM_SAFETY / "harm_bench:model=meta_llama-3-70b" / "per_instance_stats.json"
    ids = [e["instance_id"] for e in json.loads(harm.read_text())]
    assert len(ids) == 2 * len(set(ids))  # each instance twice: the annotators' scores, then the rest
    m = load_responses(
        HELM_SAFETY, metric=HELM_SAFETY_METRICS, response_type={"harm_bench": "continuous", "bbq": "binary"}
    )
    assert set(m.llms) == {"meta/llama-3-70b", "openai/gpt-4o-2024-05-13"}
    assert m.n_items == 4 and m.n_observed == 8
    runs = sorted(HELM_SAFETY.glob("*:*"))
    assert len(runs) == 4
    for run in runs:
        spec = json.loads((run / "run_spec.json").read_text())
        benchmark = spec["groups"][0]
        items = [i for i in m.items if m.data["benchmark"].sel(item=i).item() == benchmark]
        ours = float(m.data.sel(llm=spec["adapter_spec"]["model"], item=items).mean())
        reported = _helm_stat_mean(run, HELM_SAFETY_METRICS[benchmark])
        assert ours == pytest.approx(reported, abs=1e-12), run.name


def test_helm_schema_metric_of_the_whole_run_is_named_as_such():
    # schema.json's main metric of bbq exists only in each run's stats.json
    with pytest.raises(ResponseDataError) as info:
        load_responses(HELM_SAFETY)
    (message,) = info.value.problems
    assert "'bbq_accuracy' is in their stats.json only" in message and "'exact_match'" in message


def test_helm_instance_giving_one_stat_two_means_is_refused(tmp_path):
    import json

    folder = tmp_path / "v3"
    shutil.copytree(HELM_SAFETY, folder)
    stats = folder / "harm_bench:model=meta_llama-3-70b" / "per_instance_stats.json"
    entries = json.loads(stats.read_text())
    repeated = dict(entries[0]["stats"][0], mean=0.75)  # the first instance's harm_bench_score again
    entries[2]["stats"].append(repeated)
    stats.write_text(json.dumps(entries))
    twice = r"1 instance\(s\) list a stat twice.*pacemaker_tampering_methods"
    with pytest.raises(ResponseDataError, match=twice):
        load_responses(folder, metric=HELM_SAFETY_METRICS, response_type={"harm_bench": "continuous"})


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
    ("source", "name", "read"),
    [
        (
            "lm_eval",
            "lm-evaluation-harness",
            "gsm8k: metric 'exact_match', filter 'strict-match' (0.4.3+ samples_<task>_<date>.jsonl; "
            "metrics logged: ['exact_match']; filters: ['strict-match', 'flexible-extract'])",
        ),
        ("lm_eval_0.4.0", "lm-evaluation-harness", "0.4.0-0.4.2 <model_args>_<task>.jsonl arrays"),
        ("helm", "HELM", "stat 'exact_match', split 'test' (splits: ['test']"),
        ("opencompass", "OpenCompass", "gsm8k: each example's recorded correctness"),
        ("inspect", "Inspect AI", "popularity: scorer 'match' (scorers: ['match']; epochs: [1])"),
        ("benchmirt_release.csv", "BenchMIRT release", None),
    ],
)
def test_info_names_the_format_what_is_read_and_what_else_is_offered(source, name, read, capsys):
    metrics = {
        "lm_eval": ["mmlu_anatomy=acc", "gsm8k=exact_match", "ifeval=prompt_level_strict_acc"],
        "lm_eval_0.4.0": ["arc_easy=acc", "gsm8k=exact_match"],
    }
    args = ["info", str(FIXTURES / source)]
    if source in metrics:
        args += ["--metric", *metrics[source], "--filter", "gsm8k=strict-match"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert f"format: {name}" in out
    assert "LLMs: " in out and "benchmark" in out
    if read is not None:
        assert read in out


def _helm_copy(tmp_path, edit):
    """The HELM fixture with each run's per_instance_stats.json entries passed through ``edit``."""
    import json

    folder = tmp_path / "helm"
    shutil.copytree(FIXTURES / "helm", folder)
    for stats in folder.rglob("per_instance_stats.json"):
        stats.write_text(json.dumps(edit(json.loads(stats.read_text()))))
    return folder


def _with_valid_instance(entries):
    """One more unperturbed instance, in the 'valid' split, answered correctly."""
    extra = {
        "instance_id": "id99",
        "train_trial_index": 0,
        "stats": [{"name": {"name": "exact_match", "split": "valid"}, "count": 1, "sum": 1.0, "mean": 1.0}],
    }
    return [*entries, extra]


def test_helm_never_pools_splits(tmp_path):
    folder = _helm_copy(tmp_path, _with_valid_instance)
    test = load_responses(folder)  # HELM reports the test split: the valid instance is not an item
    assert test.n_items == 3 and not any(item.endswith("/id99") for item in test.items)
    valid = load_responses(folder, split="valid")
    assert list(valid.items) == ["mmlu:subject=anatomy,method=multiple_choice_joint/id99"]
    with pytest.raises(ResponseDataError, match=r"2 run\(s\) have no 'train' instances.*\['test', 'valid'\]"):
        load_responses(folder, split="train")
    with pytest.raises(ValueError, match="split= chooses a HELM run's split"):
        load_responses(FIXTURES / "opencompass", split="test")


def test_helm_problems_are_one_line_per_kind_naming_every_run(tmp_path):
    with pytest.raises(ResponseDataError) as info:
        load_responses(FIXTURES / "helm", metric="f1")
    assert len(info.value.problems) == 1  # one line for both runs, with the stats they do have
    message = info.value.problems[0]
    assert "in 2 run(s)" in message and "'exact_match'" in message and "'num_prompt_tokens'" in message

    def null_mean(entries):  # F16: a stat with "mean": null; F15: an instance without the stat
        first, second = [e for e in entries if not e.get("perturbation")][:2]
        first["stats"][0]["mean"] = None
        first["stats"][0].pop("sum", None)
        second["stats"] = [s for s in second["stats"] if s["name"]["name"] != "exact_match"]
        return entries

    with pytest.raises(ResponseDataError) as info:
        load_responses(_helm_copy(tmp_path, null_mean))
    assert "without a value of the metric, in 2 run(s)" in str(info.value)
    assert "(2 of 3)" in str(info.value)


LFS_POINTER = (
    "version https://git-lfs.github.com/spec/v1\n"
    "oid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\nsize 12345\n"
)


@pytest.mark.parametrize(
    "name", ["results.csv", "details.parquet", "responses.jsonl", "responses.json", "lm_eval"]
)
def test_git_lfs_pointers_are_named_with_what_to_run(tmp_path, name):
    if name == "lm_eval":
        source = tmp_path / "lm_eval"
        shutil.copytree(FIXTURES / "lm_eval", source)
        for samples in source.rglob("samples_gsm8k_*.jsonl"):
            samples.write_text(LFS_POINTER)
        expected = r"2 file\(s\) are Git LFS pointers"
    else:
        source = tmp_path / name
        source.write_text(LFS_POINTER)
        expected = r"1 file\(s\) are Git LFS pointers"
    with pytest.raises(ResponseDataError, match=expected) as info:
        load_responses(source, benchmark="B")
    assert "git lfs pull" in str(info.value)


def test_a_metric_or_filter_for_a_task_not_in_the_folder_is_named():
    with pytest.raises(ResponseDataError, match=r"metric= names 'gsm8kk', not in this folder; its tasks"):
        load_responses(
            FIXTURES / "lm_eval",
            metric={"mmlu_anatomy": "acc", "gsm8k": "exact_match", "gsm8kk": "acc", "ifeval": "x"},
            filter={"gsm8k": "strict-match"},
        )
    with pytest.raises(ResponseDataError, match=r"filter= names 'gsm8k_cot'"):
        load_responses(FIXTURES / "lm_eval", filter={"gsm8k_cot": "strict-match"})
    with pytest.raises(ResponseDataError, match=r"metric= names 'mmlu_anatomy', not in this folder"):
        load_responses(FIXTURES / "helm", metric={"mmlu": "exact_match", "mmlu_anatomy": "exact_match"})


def test_a_metric_that_is_not_one_number_is_said_once_per_task_not_per_line():
    with pytest.raises(ResponseDataError) as info:
        load_responses(
            FIXTURES / "lm_eval",
            metric={"mmlu_anatomy": "acc", "gsm8k": "exact_match", "ifeval": "inst_level_strict_acc"},
            filter={"gsm8k": "strict-match"},
        )
    problems = [p for p in info.value.problems if "inst_level_strict_acc" in p]
    assert len(problems) == 1 and "in 2 file(s)" in problems[0]
    assert "prompt_level_strict_acc" in problems[0]  # offered because the task logs it


def test_lm_eval_0_4_0_array_logs_equal_their_own_results_json():
    import json

    folder = FIXTURES / "lm_eval_0.4.0"
    assert detect_format(folder) == "lm_eval"
    with pytest.raises(ResponseDataError, match=r"once per filter \['strict-match', 'flexible-extract'\]"):
        load_responses(folder, metric={"arc_easy": "acc", "gsm8k": "exact_match"})
    for chosen in ("strict-match", "flexible-extract"):
        m = load_responses(
            folder, metric={"arc_easy": "acc", "gsm8k": "exact_match"}, filter={"gsm8k": chosen}
        )
        assert set(m.llms) == {"EleutherAI/pythia-160m", "Qwen/Qwen2-0.5B"}  # pretrained= of model_args
        for results_file in folder.rglob("results.json"):
            results = json.loads(results_file.read_text())
            args = dict(p.split("=") for p in results["config"]["model_args"].split(","))
            means = m.data.sel(llm=args["pretrained"]).to_series().groupby(m.data["subgroup"].values).mean()
            assert means["arc_easy"] == pytest.approx(results["results"]["arc_easy"]["acc,none"])
            assert means["gsm8k"] == pytest.approx(results["results"]["gsm8k"][f"exact_match,{chosen}"])


@pytest.mark.parametrize("version", ["v0.4.0", "v0.4.1", "v0.4.2", "v0.4.13"])
def test_lm_eval_runs_as_the_harness_itself_wrote_them(version):
    """0.4.0-0.4.2 write ``<model_args>_<task>.jsonl`` arrays beside ``results.json``; 0.4.13
    writes ``samples_<task>_<date>.jsonl`` beside ``results_<date>.json``."""
    import json

    folder = FIXTURES / "lm_eval_0.4_written" / version
    metric = {"tiny_mc": "acc", "tiny_gen": "exact_match"}
    assert detect_format(folder) == "lm_eval"
    with pytest.raises(ResponseDataError) as refused:
        load_responses(folder, metric=metric)
    (said,) = refused.value.problems  # once for both files, and no advice to pass the metric mapping given
    assert "once per filter ['strict-match', 'flexible-extract']" in said and "in 2 file(s)" in said
    assert "model-1" in said and "model-2" in said
    with pytest.raises(ResponseDataError, match=r"task 'tiny_gen' has no filter 'none' \(its filters"):
        load_responses(folder, metric=metric, filter={"tiny_gen": "none"})
    for chosen in ("strict-match", "flexible-extract"):
        m = load_responses(folder, metric=metric, filter={"tiny_gen": chosen})
        assert m.n_items == 22 and m.is_binary
        assert set(m.llms) == {"scripted-org/model-1", "scripted-org/model-2"}
        for results_file in folder.rglob("results*.json"):
            results = json.loads(results_file.read_text())
            args = results["config"]["model_args"]
            if isinstance(args, str):  # 0.4.0-0.4.2
                args = dict(p.split("=") for p in args.split(","))
            means = m.data.sel(llm=args["pretrained"]).to_series().groupby(m.data["subgroup"].values).mean()
            assert means["tiny_mc"] == pytest.approx(results["results"]["tiny_mc"]["acc,none"])
            assert means["tiny_gen"] == pytest.approx(results["results"]["tiny_gen"][f"exact_match,{chosen}"])


def test_details_as_downloaded_and_as_lighteval_writes_them(tmp_path):
    def harness(values):
        return pd.DataFrame(
            {
                "full_prompt": ["Question: ..."] * len(values),
                "predictions": [[-1.0, -2.0]] * len(values),
                "metrics": [{"acc": v, "acc_norm": v} for v in values],
            }
        )

    model = tmp_path / "details_01-ai__Yi-34B"
    old, new = "2023-08-22T09-05-23.035851", "2023-09-03T13-39-55.123456"
    _write_parquet(model / old / f"details_harness|arc:challenge|25_{old}.parquet", harness([0.0, 0.0]))
    _write_parquet(model / new / f"details_harness|arc:challenge|25_{new}.parquet", harness([1.0, 0.0]))
    _write_parquet(
        model / new / f"details_harness|hendrycksTest-anatomy|5_{new}.parquet", harness([1.0, 1.0, 0.0])
    )
    lighteval = pd.DataFrame(
        {
            "doc": [{"query": "Q1"}, {"query": "Q2"}],
            "model_response": [{"text": ["4"]}, {"text": ["7"]}],
            "metric": [{"em": 1.0, "acc": 1.0}, {"em": 0.0, "acc": 0.0}],
        }
    )
    stamp = "2025-01-10T10-00-00.000000"
    _write_parquet(
        tmp_path / "details" / "Qwen" / "Qwen2-0.5B" / stamp / f"details_lighteval|gsm8k|5_{stamp}.parquet",
        lighteval,
    )
    assert detect_format(tmp_path) == "oll_details"
    m = load_responses(tmp_path)
    assert set(m.llms) == {"01-ai/Yi-34B", "Qwen/Qwen2-0.5B"}
    bench = m.data["benchmark"].to_series()
    assert bench["arc:challenge:0"] == "arc" and bench["hendrycksTest-anatomy:2"] == "mmlu"
    assert m.data.sel(llm="01-ai/Yi-34B", item="arc:challenge:0").item() == 1  # the newer run
    assert m.data.sel(llm="Qwen/Qwen2-0.5B", item="gsm8k:1").item() == 0  # lighteval's metric column
    with pytest.raises(ResponseDataError, match=r"no metric 'pqem'.*'em'"):
        load_responses(tmp_path, metric="pqem")


def test_v1_details_default_to_the_metric_the_leaderboard_reported(tmp_path):
    """The v1 leaderboard reported ARC and HellaSwag as ``acc_norm`` and TruthfulQA as ``mc2``
    (a probability per question); the harness-era files hold flat metric columns."""
    stamp = "2023-07-19T13-48-53.093937"
    folder = tmp_path / "details_Corianas__111m" / stamp
    arc = pd.DataFrame({"example": ["q1", "q2"], "acc": [1.0, 0.0], "acc_norm": [0.0, 1.0]})
    truthfulqa = pd.DataFrame({"example": ["q1", "q2"], "mc1": [1.0, 0.0], "mc2": [0.7, 0.2]})
    _write_parquet(folder / f"details_harness|arc:challenge|25_{stamp}.parquet", arc)
    _write_parquet(folder / f"details_harness|truthfulqa:mc|0_{stamp}.parquet", truthfulqa)
    with pytest.raises(ResponseDataError, match=r"truthfulqa:mc:0\)=0\.7.*response_type"):
        load_responses(tmp_path)
    m = load_responses(tmp_path, response_type={"truthfulqa": "continuous"})
    row = m.data.sel(llm="Corianas/111m").to_series()
    assert row[["arc:challenge:0", "arc:challenge:1"]].tolist() == [0.0, 1.0]  # acc_norm, not acc
    assert row[["truthfulqa:mc:0", "truthfulqa:mc:1"]].tolist() == [0.7, 0.2]
    m = load_responses(tmp_path, metric={"truthfulqa": "mc1"})
    assert m.is_binary and m.data.sel(llm="Corianas/111m", item="truthfulqa:mc:0").item() == 1.0


def test_lighteval_details_without_a_suite_and_as_git_lfs_pointers(tmp_path):
    """lighteval since its PR #1038 (November 2025) names details ``details_<task>|<shots>_<date>``;
    its own reference details are committed as Git LFS pointers."""
    stamp = "2025-11-05T14-43-47.148527"
    details = pd.DataFrame(
        {
            "doc": [{"query": "Q1"}, {"query": "Q2"}, {"query": "Q3"}],
            "model_response": [{"text": ["A"]}, {"text": ["B"]}, {"text": ["C"]}],
            "metric": [{"acc": 1.0}, {"acc": 0.0}, {"acc": 1.0}],
        }
    )
    org_model = tmp_path / "out" / "details" / "HuggingFaceTB" / "SmolLM2-1.7B-Instruct" / stamp
    _write_parquet(org_model / f"details_mmlu:college_chemistry|5_{stamp}.parquet", details)
    no_org = tmp_path / "out" / "details" / "gpt2" / stamp
    _write_parquet(no_org / f"details_gsm8k_test|0_{stamp}.parquet", details)
    assert detect_format(tmp_path / "out") == "oll_details"
    m = load_responses(tmp_path / "out")
    assert set(m.llms) == {"HuggingFaceTB/SmolLM2-1.7B-Instruct", "gpt2"}
    assert m.data["benchmark"].to_series()["mmlu:college_chemistry:1"] == "mmlu"
    assert m.data.sel(llm="gpt2", item="gsm8k_test:1").item() == 0
    # as lighteval's repository holds them (tests/reference_details/<run>/, commit 3fd15266)
    pointers = tmp_path / "reference_details" / "SmolLM2-1.7B-Instruct-transformers"
    pointers.mkdir(parents=True)
    for task in ("arc:challenge|25", "gsm8k_test|0"):
        (pointers / f"details_{task}_{stamp}.parquet").write_text(
            "version https://git-lfs.github.com/spec/v1\n"
            "oid sha256:ef968329bee498b3387ec8df3677ca9bbac72e90599efbe7f78db23f4227b2f6\nsize 21785\n"
        )
    with pytest.raises(ResponseDataError, match=r"2 file\(s\) are Git LFS pointers.*git lfs pull"):
        load_responses(tmp_path / "reference_details")


def test_inspect_0_3_285_logs_with_zstandard_archives_equal_their_own_accuracy():
    """Logs written by Inspect AI 0.3.285 itself (``.eval`` archives whose members are
    Zstandard-compressed, which Python's zipfile reads only from 3.14, and ``.json``): a task
    with two scorers and one answered in two epochs."""
    import json
    import zipfile

    import numpy as np

    from benchmirt_bayes.data.harness_formats import ZIP_ZSTANDARD, _zip_member

    folder = FIXTURES / "inspect_written" / "logs"
    archives = sorted(folder.glob("*.eval"))
    with zipfile.ZipFile(archives[0]) as archive:
        assert {i.compress_type for i in archive.infolist()} == {ZIP_ZSTANDARD}
    assert detect_format(folder) == "inspect"
    with pytest.raises(ResponseDataError) as refused:
        load_responses(folder)
    scorers, epochs = sorted(refused.value.problems, reverse=True)
    assert epochs.startswith("samples scored in 2 epochs; pass filter='epoch=K', in 3 file(s)")
    assert scorers.startswith("task 'tiny_sums' has the scorers ['includes', 'match']: pass metric=")
    assert "in 3 file(s)" in scorers
    headers = [json.loads(p.read_text()) for p in folder.glob("*.json")]
    for path in archives:
        with zipfile.ZipFile(path) as archive:
            headers.append(json.loads(_zip_member(archive, "header.json")))
    assert len(headers) == 6
    match = {"tiny_sums": "match"}
    per_epoch = [load_responses(folder, metric=match, filter=f"epoch={epoch}") for epoch in (1, 2)]
    includes = load_responses(folder, metric={"tiny_sums": "includes"}, filter="epoch=1")
    assert set(includes.llms) == {"scripted/model-1", "scripted/model-2", "scripted/model-3"}
    for header in headers:  # Inspect's accuracy: the mean over samples of the mean over epochs
        task, llm = header["eval"]["task"], header["eval"]["model"]
        for score in header["results"]["scores"]:
            matrices = [includes] if score["name"] == "includes" else per_epoch
            if task == "tiny_sums":
                matrices = matrices[:1]
            rows = [m.data.sel(llm=llm).to_series() for m in matrices]
            means = [row[row.index.str.startswith(f"{task}:")].mean() for row in rows]
            assert np.mean(means) == pytest.approx(score["metrics"]["accuracy"]["value"])


def test_inspect_logs_as_published_equal_their_own_accuracy():
    """Real Inspect AI logs (.eval archives and a .json log) from inspect_ai's own test data."""
    import json
    import zipfile

    folder = FIXTURES / "inspect"
    assert detect_format(folder) == "inspect"
    m = load_responses(folder)
    assert set(m.llms) == {"openai/gpt-4o-mini", "ollama/gemma3", "openai/gpt-4o"}
    assert set(m.benchmark_names) == {"popularity", "mmlu_0_shot"}
    logs = [json.loads((folder / "2025-05-12T20-28-13-04-00_popularity.json").read_text())]
    for name in ("log_read_sample.eval", "mmlu-summary-choices.eval"):
        with zipfile.ZipFile(folder / name) as archive:
            logs.append(json.loads(archive.read("header.json")))
    for log in logs:  # each log's own accuracy is the mean of its items
        task = log["eval"].get("task_display_name") or log["eval"]["task"].split("/")[-1]
        accuracy = log["results"]["scores"][0]["metrics"]["accuracy"]["value"]
        row = m.data.sel(llm=log["eval"]["model"]).to_series()
        assert row[[i for i in row.index if i.startswith(f"{task}:")]].mean() == pytest.approx(accuracy)
    one = load_responses(folder / "mmlu-summary-choices.eval")  # a single archive
    assert one.n_observed == 1 and one.values[0, 0] == 0  # scored "I"
    with pytest.raises(ResponseDataError, match=r"metric= names 'popularity_v2'"):
        load_responses(folder, metric={"popularity_v2": "match"})
    with pytest.raises(ResponseDataError, match=r"samples with no score from 'includes'"):
        load_responses(folder, metric={"popularity": "includes", "mmlu_0_shot": "choice"})
    with pytest.raises(ResponseDataError, match=r"filter='epoch=K'"):
        load_responses(folder, filter="strict-match")


def _opencompass_result(tmp_path, model: str, dataset: str, result: dict) -> Path:
    import json

    folder = tmp_path / "outputs" / "default" / "20250101_000000" / "results" / model
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{dataset}.json").write_text(json.dumps(result))
    return tmp_path / "outputs"


def test_opencompass_correctness_in_each_form_its_evaluators_write(tmp_path):
    """Detail layouts from opencompass/tasks/openicl_eval.py, evaluator/cascade_evaluator.py and
    datasets/generic.py (commit a5acc4bb): a one-element list, a judge's grade letter, a cascade's
    rule and LLM evaluations, and an LLM judge's raw outputs (A is correct)."""
    details = {
        "0": {"correct": [True]},
        "1": {"correct": "B"},
        "2": {"rule_evaluation": {"correct": False}, "llm_evaluation": {"prediction": "A"}},
        "3": {"rule_evaluation": {"correct": True}},
    }
    folder = _opencompass_result(tmp_path, "m1", "aime", {"accuracy": 75.0, "details": details})
    judge = {"0": {"prediction": "Grade: A", "gold": "4"}, "1": {"prediction": "B", "gold": "5"}}
    judged = {"accuracy": 50.0, "attempted_ratio": 100.0, "correct_count": 1, "details": judge}
    _opencompass_result(tmp_path, "m1", "simpleqa", judged)
    m = load_responses(folder)
    row = m.data.sel(llm="m1").to_series()
    assert row[["aime:0", "aime:1", "aime:2", "aime:3"]].tolist() == [1, 0, 1, 1]
    assert row[["simpleqa:0", "simpleqa:1"]].tolist() == [1, 0]
    for dataset, accuracy in (("aime", 75.0), ("simpleqa", 50.0)):  # each file's own accuracy
        assert 100 * row[[i for i in row.index if i.startswith(dataset)]].mean() == pytest.approx(accuracy)


def test_opencompass_subjective_folders_and_missing_details_are_named_once(tmp_path):
    folder = _opencompass_result(tmp_path, "m1_judged-by--gpt-4", "alignment_bench", {"score": 5.1})
    with pytest.raises(ResponseDataError, match=r"1 subjective evaluation folder\(s\).*m1_judged-by--gpt-4"):
        load_responses(folder)
    other = tmp_path / "other"
    for model in ("m1", "m2"):
        _opencompass_result(other, model, "gsm8k", {"accuracy": 50.0})
    with pytest.raises(ResponseDataError) as info:
        load_responses(other / "outputs")
    assert len(info.value.problems) == 1 and "in 2 file(s)" in info.value.problems[0]


def test_lm_eval_and_opencompass_fixtures_equal_their_own_aggregates():
    import json

    folder = FIXTURES / "lm_eval"
    for chosen in ("strict-match", "flexible-extract"):
        m = load_responses(
            folder,
            metric={"mmlu_anatomy": "acc", "gsm8k": "exact_match", "ifeval": "prompt_level_strict_acc"},
            filter={"gsm8k": chosen},
        )
        for results_file in folder.rglob("results_*.json"):
            results = json.loads(results_file.read_text())
            row = m.data.sel(llm=results["model_name"]).to_series()
            means = row.groupby(m.data["subgroup"].values).mean()
            assert means["mmlu_anatomy"] == pytest.approx(results["results"]["mmlu_anatomy"]["acc,none"])
            assert means["gsm8k"] == pytest.approx(results["results"]["gsm8k"][f"exact_match,{chosen}"])
            ifeval = results["results"]["ifeval"]["prompt_level_strict_acc,none"]
            assert means["ifeval"] == pytest.approx(ifeval)
    m = load_responses(FIXTURES / "opencompass")
    for result_file in (FIXTURES / "opencompass").rglob("results/*/*.json"):
        row = m.data.sel(llm=result_file.parent.name).to_series()
        items = [i for i in row.index if i.startswith(f"{result_file.stem}:")]
        accuracy = json.loads(result_file.read_text())["accuracy"]
        assert 100 * row[items].mean() == pytest.approx(accuracy)


def test_opencompass_0_5_4_as_it_wrote_them():
    """Work folders written by OpenCompass 0.5.4 itself: generated and perplexity-ranked multiple
    choice (``correct`` as ``[true]``; ``type: PPL`` details OpenCompass formats itself) and
    ``AccwithDetailsEvaluator``'s ``is_correct``; a default-evaluator dataset has ``GEN`` details
    without any correctness, which is refused naming every file."""
    import json

    folder = FIXTURES / "opencompass_written"
    m = load_responses(folder / "details")
    assert set(m.llms) == {"scripted-1", "scripted-2"}
    assert set(m.benchmark_names) == {"tiny_mcq_gen", "tiny_mcq_ppl", "tiny_qa"} and m.n_items == 34
    results = sorted((folder / "details").rglob("results/*/*.json"))
    assert len(results) == 6
    for result_file in results:
        row = m.data.sel(llm=result_file.parent.name).to_series()
        items = [i for i in row.index if i.startswith(f"{result_file.stem}:")]
        assert 100 * row[items].mean() == pytest.approx(json.loads(result_file.read_text())["accuracy"])
    with pytest.raises(ResponseDataError) as refused:
        load_responses(folder / "no_details")
    (line,) = refused.value.problems
    assert "type 'GEN'" in line and "AccwithDetailsEvaluator" in line and "in 2 file(s)" in line
    assert "scripted-1/tiny_qa.json" in line and "scripted-2/tiny_qa.json" in line


def test_lighteval_0_13_as_it_wrote_them_each_row_by_its_document():
    """Details and results written by lighteval 0.13.0 itself: the rows are not in document
    order, so each cell must come from the row whose ``doc.id`` names it."""
    import json

    folder = FIXTURES / "lighteval_written" / "out"
    assert detect_format(folder) == "oll_details"
    with pytest.raises(ResponseDataError) as refused:
        load_responses(folder)  # tiny_gen scores exact match ('em'), not 'acc'
    (line,) = refused.value.problems
    assert "task 'tiny_gen': no metric 'acc'" in line and "['em']" in line and "in 2 file(s)" in line
    metric = {"tiny_mc": "acc", "tiny_gen": "em"}
    m = load_responses(folder, metric=metric)
    assert set(m.llms) == {"scripted-org/model-1", "scripted-org/model-2"} and m.n_items == 22
    out_of_order = 0
    for details in folder.rglob("details_*.parquet"):
        llm = f"{details.parents[2].name}/{details.parents[1].name}"
        task = details.name.removeprefix("details_").split("|")[0]
        table = pd.read_parquet(details)
        for position, (doc, scores) in enumerate(zip(table["doc"], table["metric"], strict=True)):
            assert m.data.sel(llm=llm, item=f"{task}:{doc['id']}").item() == scores[metric[task]]
            out_of_order += doc["id"] != str(position)
    assert out_of_order > 0  # the check above would pass by position otherwise
    for results_file in folder.rglob("results_*.json"):
        results = json.loads(results_file.read_text())
        row = m.data.sel(llm=results["config_general"]["model_config"]["model_name"]).to_series()
        for task, name in metric.items():
            items = [i for i in row.index if i.startswith(f"{task}:")]
            assert row[items].mean() == pytest.approx(results["results"][f"{task}|0"][name])


def test_real_lm_eval_runs_are_read_cell_by_cell_and_a_lower_is_better_metric_is_refused():
    """Two real lm-evaluation-harness 0.4.8 runs, unchanged: TruthfulQA (generation) with its
    results file renamed by its authors, and a task scored by mean absolute error."""
    import json

    folder = FIXTURES / "lm_eval_real" / "truthfulqa_gen"
    samples = next(folder.rglob("samples_truthfulqa_gen_*.jsonl"))
    results = json.loads(next(folder.rglob("truthfulqa_gen_neo125_*.json")).read_text())
    records = [json.loads(line) for line in samples.read_text().splitlines()]
    for metric in ("bleu_acc", "rouge1_acc", "rouge2_acc", "rougeL_acc"):
        m = load_responses(folder, metric=metric)
        assert list(m.llms) == [results["model_name"]]  # from the renamed file of the samples' date
        assert m.n_items == len(records) == results["n-samples"]["truthfulqa_gen"]["effective"]
        cells = m.data.sel(llm=results["model_name"]).to_series()
        assert {i: cells[f"truthfulqa_gen:{r['doc_id']}"] for i, r in enumerate(records)} == {
            i: r[metric] for i, r in enumerate(records)
        }
        assert cells.mean() == pytest.approx(results["results"]["truthfulqa_gen"][f"{metric},none"])
    with pytest.raises(ResponseDataError, match=r"marks 'mae' lower-is-better .*\(the task has none\)"):
        load_responses(FIXTURES / "lm_eval_real" / "polymer", metric="mae")


def test_lm_eval_reruns_newest_by_default_and_run_chooses_by_date(tmp_path):
    import json

    folder = tmp_path / "lm_eval"
    shutil.copytree(FIXTURES / "lm_eval", folder)
    first, later = "2024-06-01T10-00-00.123456", "2024-07-15T08-30-00.000001"
    for model_dir in folder.iterdir():  # a rerun of mmlu_anatomy with every answer flipped
        lines = (model_dir / f"samples_mmlu_anatomy_{first}.jsonl").read_text().splitlines()
        flipped = [json.dumps(r | {"acc": 1.0 - r["acc"]}) for r in map(json.loads, lines)]
        (model_dir / f"samples_mmlu_anatomy_{later}.jsonl").write_text("\n".join(flipped) + "\n")
        shutil.copy(model_dir / f"results_{first}.json", model_dir / f"results_{later}.json")
    options = {
        "metric": {"mmlu_anatomy": "acc", "gsm8k": "exact_match", "ifeval": "prompt_level_strict_acc"},
        "filter": {"gsm8k": "strict-match"},
    }
    newest = load_responses(folder, **options)
    chosen = load_responses(folder, run="2024-06-01", **options)
    original = load_responses(FIXTURES / "lm_eval", **options)
    anatomy = [i for i in original.items if i.startswith("mmlu_anatomy:")]
    assert (newest.data.sel(item=anatomy) == 1 - original.data.sel(item=anatomy)).all()
    assert chosen.data.equals(original.data)
    assert newest.data.attrs["format"] == "lm_eval"  # what was read travels with the matrix
    assert f"samples_mmlu_anatomy_{later}.jsonl of 2 runs (newest)" in newest.data.attrs["read"]
    for results_file in (FIXTURES / "lm_eval").rglob("results_*.json"):  # the file's own aggregate
        results = json.loads(results_file.read_text())
        mean = chosen.data.sel(llm=results["model_name"], item=anatomy).mean().item()
        assert mean == pytest.approx(results["results"]["mmlu_anatomy"]["acc,none"])
    # a date that names no log of some model and task: every such pair and its dates, once
    with pytest.raises(
        ResponseDataError, match=r"task 'gsm8k': 0 logs dated '2024-07'.*2024-06-01T10"
    ) as info:
        load_responses(folder, run="2024-07", **options)
    assert len(info.value.problems) == 5  # 2 models × gsm8k, ifeval, and the closing line
    with pytest.raises(ValueError, match="run= chooses among lm-evaluation-harness reruns"):
        load_responses(FIXTURES / "helm", run="2024-06-01")
    with pytest.raises(ResponseDataError, match=r"0\.4\.3 and later"):
        load_responses(FIXTURES / "lm_eval_0.4.0", run="2024-06-01")
    # reruns in another setting (a 5-shot rerun of a 0-shot task) are named, and the newest read
    for results_file in folder.rglob(f"results_{later}.json"):
        results = json.loads(results_file.read_text())
        results["n-shot"]["mmlu_anatomy"] = 5
        results_file.write_text(json.dumps(results))
    differ = rf"task 'mmlu_anatomy' in .*runs differ in n-shot \({first}: 0, {later}: 5\)"
    with pytest.warns(UserWarning, match=differ):
        assert load_responses(folder, **options).data.equals(newest.data)


def test_info_names_the_rerun_it_reads(tmp_path, capsys):
    folder = tmp_path / "lm_eval"
    shutil.copytree(FIXTURES / "lm_eval", folder)
    for model_dir in folder.iterdir():
        shutil.copy(
            model_dir / "samples_ifeval_2024-06-01T10-00-00.123456.jsonl",
            model_dir / "samples_ifeval_2024-08-01T00-00-00.000000.jsonl",
        )
    args = ["info", str(folder), "--metric", "mmlu_anatomy=acc", "gsm8k=exact_match"]
    args += ["ifeval=prompt_level_strict_acc", "--filter", "gsm8k=strict-match"]
    assert main(args) == 0
    assert "samples_ifeval_2024-08-01T00-00-00.000000.jsonl of 2 runs (newest)" in capsys.readouterr().out
    assert main([*args, "--run", "2024-06"]) == 0
    assert (
        "samples_ifeval_2024-06-01T10-00-00.123456.jsonl of 2 runs (run='2024-06')" in capsys.readouterr().out
    )
    assert main([*args, "--run", "2024-08"]) != 0  # only ifeval was rerun then
    assert "task 'gsm8k': 0 logs dated '2024-08'" in capsys.readouterr().err


def test_run_chooses_per_task_where_only_some_tasks_were_rerun(tmp_path, capsys):
    """A rerun of one task on a later date: that date for it, another (or the newest) for the rest."""
    import json

    folder = tmp_path / "lm_eval"
    shutil.copytree(FIXTURES / "lm_eval", folder)
    first, later = "2024-06-01T10-00-00.123456", "2024-08-01T00-00-00.000000"
    for model_dir in folder.iterdir():  # ifeval rerun later with every answer flipped
        lines = (model_dir / f"samples_ifeval_{first}.jsonl").read_text().splitlines()
        flipped = [
            json.dumps(r | {"prompt_level_strict_acc": not r["prompt_level_strict_acc"]})
            for r in map(json.loads, lines)
        ]
        (model_dir / f"samples_ifeval_{later}.jsonl").write_text("\n".join(flipped) + "\n")
    options = {
        "metric": {"mmlu_anatomy": "acc", "gsm8k": "exact_match", "ifeval": "prompt_level_strict_acc"},
        "filter": {"gsm8k": "strict-match"},
    }
    original = load_responses(FIXTURES / "lm_eval", **options)
    ifeval = [i for i in original.items if i.startswith("ifeval:")]
    others = [i for i in original.items if not i.startswith("ifeval:")]
    first_run = load_responses(folder, run={"ifeval": "2024-06"}, **options)
    assert first_run.data.equals(original.data)
    rerun = load_responses(folder, run={"ifeval": "2024-08", "gsm8k": "2024-06-01"}, **options)
    assert (rerun.data.sel(item=ifeval) == 1 - original.data.sel(item=ifeval)).all()
    assert rerun.data.sel(item=others).equals(original.data.sel(item=others))
    assert "(run='2024-08')" in rerun.data.attrs["read"] and "(newest)" not in rerun.data.attrs["read"]
    with pytest.raises(ResponseDataError, match=r"names task\(s\) \['arc'\] that no model logged"):
        load_responses(folder, run={"arc": "2024-06"}, **options)
    with pytest.raises(ResponseDataError, match=r"task 'ifeval': 0 logs dated '2024-07'"):
        load_responses(folder, run={"ifeval": "2024-07"}, **options)
    args = ["info", str(folder), "--metric", "mmlu_anatomy=acc", "gsm8k=exact_match"]
    args += ["ifeval=prompt_level_strict_acc", "--filter", "gsm8k=strict-match"]
    assert main([*args, "--run", "ifeval=2024-06", "gsm8k=2024-06"]) == 0
    out = capsys.readouterr().out
    assert f"samples_ifeval_{first}.jsonl of 2 runs (run='2024-06')" in out


def test_helm_reads_the_main_metric_and_split_of_the_runs_group_in_schema_json(tmp_path):
    import json

    def with_quasi_exact_match(entries):  # each instance also scored by a second stat, 1 − exact_match
        entries = _with_valid_instance(entries)
        for entry in entries:
            for stat in list(entry["stats"]):
                if stat["name"]["name"] == "exact_match":
                    other = {**stat, "name": {**stat["name"], "name": "quasi_exact_match"}}
                    entry["stats"].append(other | {"mean": 1.0 - stat["mean"], "sum": 1.0 - stat["sum"]})
        return entries

    folder = _helm_copy(tmp_path, with_quasi_exact_match)
    exact = load_responses(folder)  # no schema.json: exact_match on the test split
    suite = folder / "benchmark_output" / "runs" / "v1"
    schema = {  # as helm-summarize writes it: run groups with their environment
        "run_groups": [
            {"name": "core_scenarios", "subgroups": ["mmlu"]},
            {"name": "mmlu", "environment": {"main_name": "quasi_exact_match", "main_split": "test"}},
        ]
    }
    (suite / "schema.json").write_text(json.dumps(schema))
    main_metric = load_responses(folder)
    assert (main_metric.data == 1 - exact.data).all()
    assert load_responses(folder, metric="exact_match").data.equals(exact.data)  # metric= still wins
    schema["run_groups"][1]["environment"]["main_split"] = "valid"
    (suite / "schema.json").write_text(json.dumps(schema))
    valid = load_responses(folder)
    assert list(valid.items) == ["mmlu:subject=anatomy,method=multiple_choice_joint/id99"]
    assert load_responses(folder, split="test").n_items == 3  # split= still wins
    assert main(["info", str(folder)]) == 0


def test_info_says_helm_metric_came_from_schema(tmp_path, capsys):
    import json

    folder = _helm_copy(tmp_path, lambda entries: entries)
    schema = {
        "run_groups": [{"name": "mmlu", "environment": {"main_name": "exact_match", "main_split": "test"}}]
    }
    (folder / "benchmark_output" / "runs" / "v1" / "schema.json").write_text(json.dumps(schema))
    assert main(["info", str(folder)]) == 0
    assert (
        "stats: ['exact_match', 'num_prompt_tokens']; schema.json's main metric of 'mmlu')"
        in capsys.readouterr().out
    )


def test_pyirt_fixture_from_py_irt_itself_is_read_cell_by_cell():
    import json

    path = FIXTURES / "pyirt" / "minitest.jsonlines"  # py-irt's own test fixture, unchanged
    m = load_responses(path, benchmark="minitest")
    assert detect_format(path) == "pyirt" and m.data.attrs["format"] == "pyirt"
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert m.n_llms == 4 and m.n_items == 4 and m.n_observed == 16
    for line in lines:
        for item, value in line["responses"].items():
            assert m.data.sel(llm=line["subject_id"], item=item).item() == value


def test_inspect_reads_samples_of_the_newest_log_only(tmp_path, monkeypatch):
    import json
    import zipfile

    from benchmirt_bayes.data import harness_formats

    source = FIXTURES / "inspect" / "log_read_sample.eval"
    with zipfile.ZipFile(source) as archive:
        created = json.loads(archive.read("header.json"))["eval"]["created"]
    older = tmp_path / "older.eval"  # the same run, logged a year earlier, every sample unscored
    with zipfile.ZipFile(source) as archive, zipfile.ZipFile(older, "w") as out:
        for name in archive.namelist():
            content = json.loads(archive.read(name))
            if name == "header.json":
                content["eval"]["created"] = str(int(created[:4]) - 1) + created[4:]
            elif name.startswith("samples/"):
                content["scores"] = {}
            out.writestr(name, json.dumps(content))
    shutil.copy(source, tmp_path / "newer.eval")
    reads = []
    real = harness_formats._inspect_log

    def counted(path, samples=True):
        reads.append((path.name, samples))
        return real(path, samples)

    monkeypatch.setattr(harness_formats, "_inspect_log", counted)
    m = load_responses(tmp_path)
    assert m.data.equals(load_responses(source).data)  # the newest log, whole
    assert ("older.eval", True) not in reads and reads.count(("newer.eval", True)) == 1


def test_lm_eval_task_scored_only_over_the_whole_task_is_named_once(tmp_path):
    """A generation task with a corpus-level metric (lm-eval 0.4.10's masakhaner: each sample's
    ``f1`` holds the target and the prediction, which the task's aggregation scores together)."""
    import json

    model = tmp_path / "google__gemma-2b"
    model.mkdir()
    stamp = "2026-01-16T15-23-47.285735"
    task = "masakhaner_luo_prompt_1"
    samples = [
        {
            "doc_id": i,
            "doc": {"id": str(i), "text": "...", "target": "DATE: kawuononi"},
            "target": "DATE: kawuononi",
            "arguments": {"gen_args_0": {"arg_0": "...", "arg_1": {"do_sample": False}}},
            "resps": [[" DATE: 796"]],
            "filtered_resps": [["date: 796"]],
            "filter": "flexible-extract",
            "metrics": ["f1"],
            "doc_hash": "h",
            "prompt_hash": "p",
            "target_hash": "t",
            "f1": ["DATE: kawuononi", ["date: 796"]],
        }
        for i in range(3)
    ]
    (model / f"samples_{task}_{stamp}.jsonl").write_text("\n".join(map(json.dumps, samples)) + "\n")
    results = {
        "results": {task: {"alias": task, "f1,flexible-extract": 0.0656}},
        "group_subtasks": {task: []},
        "model_name": "google/gemma-2b",
        "model_name_sanitized": "google__gemma-2b",
    }
    (model / f"results_{stamp}.json").write_text(json.dumps(results))
    for metric in (None, "f1"):
        with pytest.raises(ResponseDataError) as info:
            load_responses(tmp_path, metric=metric)
        (line,) = info.value.problems  # one line for the task, no hint about mixing tasks
        assert "has no per-sample number: its metric(s) ['f1'] are aggregated over the whole task" in line
        assert f"samples_{task}_{stamp}.jsonl" in line
