"""Result files as evaluation tools publish them, read into one long table.

Each reader returns ``(long, item_metadata)``: a table with columns ``llm``, ``item``,
``correct`` (one row per LLM × item) and a table ``item, benchmark, subgroup`` (or
``None``), which :func:`benchmirt_bayes.data.loaders.from_long_frame` then validates like
any other input. Layouts, as the tools write them:

* **lm-evaluation-harness** (``--log_samples``): ``<output>/<model>/samples_<task>_<date>.jsonl``
  beside ``results_<date>.json``; a row holds ``doc_id``, ``doc``, ``target``,
  ``arguments``, ``resps``, ``filtered_resps``, ``filter``, ``metrics`` (the metric
  names), ``doc_hash``, ``prompt_hash``, ``target_hash`` and one key per metric; tasks
  with several filters repeat each ``doc_id`` once per filter.
* **Open LLM Leaderboard details** (Parquet): v2 configs
  ``<org>__<model>__leaderboard_<bbh|gpqa|math|mmlu_pro|musr|ifeval>_<subtask>`` with
  ``doc_id``, ``doc``, ``target``, ``filtered_resps`` and the metric column; v1 configs
  ``harness_<task>_<shots>`` with ``full_prompt`` and ``acc`` / ``acc_norm`` / ``mc1`` or
  a ``metrics`` struct.
* **HELM** run folders: ``per_instance_stats.json`` (entries with ``instance_id``,
  ``perturbation``, ``train_trial_index`` and a ``stats`` list of ``{name: {name, split,
  …}, count, sum, mean, …}``) beside ``run_spec.json`` and ``scenario_state.json``.
* **OpenCompass** work folders: ``results/<model>/<dataset>.json`` whose ``details``
  (written with ``--dump-eval-details``) hold ``correct`` per example, keyed ``"0"``,
  ``"1"``, … (or a list), beside ``predictions/<model>/<dataset>.json`` with
  ``origin_prompt``, ``prediction`` and ``gold``.
* **py-irt** JSON lines: ``{"subject_id": ..., "responses": {item: 0/1}}``.

Ids are kept as written; a metric that is not one number per sample, a sample without
``doc_id``, an ambiguous filter or trial, and a model with no responses are errors naming
the file and line.
"""

from __future__ import annotations

import functools
import glob
import io
import json
import re
import warnings
import zipfile
import zlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from benchmirt_bayes.data.tables import refuse_git_lfs_pointers
from benchmirt_bayes.errors import ResponseDataError, limit_listing

LONG_COLUMNS = ["llm", "item", "correct"]
READ_ATTR = "read"
"""``long.attrs[READ_ATTR]``: one line per task saying what was read and what else the files offer."""


def _finished(
    rows: list, meta: Mapping[str, tuple[str, str]], read: Mapping[str, str], problems: list[str], source: Any
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The long table and its item metadata (item → (benchmark, subgroup)), or one error with all problems."""
    if problems:
        raise ResponseDataError(problems[:50], source=str(source))
    metadata = pd.DataFrame(
        [(item, b, s) for item, (b, s) in meta.items()], columns=["item", "benchmark", "subgroup"]
    )
    return _long_frame(rows, read), metadata


def _long_frame(rows: list, read: Mapping[str, str]) -> pd.DataFrame:
    """The long table, with what was read per task (and the alternatives) in its attrs."""
    long = pd.DataFrame(rows, columns=LONG_COLUMNS)
    long.attrs[READ_ATTR] = [f"{task}: {text}" for task, text in sorted(read.items())]
    return long


Reader = Callable[..., tuple[pd.DataFrame, pd.DataFrame | None]]


def _task_setting(setting: str | Mapping[str, str] | None, task: str) -> str | None:
    return setting if setting is None or isinstance(setting, str) else setting.get(task)


def _unknown_keys(setting: Any, what: str, known: Iterable[str]) -> list[str]:
    """A mapping's keys that name no task (or benchmark) of the folder: one problem, listing the known."""
    if not isinstance(setting, Mapping):
        return []
    known = sorted(set(map(str, known)))
    unknown = [key for key in setting if str(key) not in known]
    if not unknown:
        return []
    return [
        f"{what}= names {limit_listing(unknown)}, not in this folder; its tasks: {limit_listing(known, 30)}"
    ]


class _GroupedProblems:
    """Problems of one kind said once, with every file (and line) they concern."""

    def __init__(self) -> None:
        self._where: dict[str, dict[str, list[int]]] = {}

    def add(self, kind: str, file: str, line: int | None = None) -> None:
        lines = self._where.setdefault(kind, {}).setdefault(file, [])
        if line is not None:
            lines.append(line)

    def lines(self) -> list[str]:
        out = []
        for kind, files in self._where.items():
            places = [
                f"{file} ({len(lines)} line(s): {limit_listing(lines, 3)})" if lines else file
                for file, lines in files.items()
            ]
            out.append(
                f"{kind}, in {len(files)} file(s): {'; '.join(places[:5])}"
                + (" …" if len(places) > 5 else "")
            )
        return out


def _scalar(value: Any) -> float | None:
    """One number from a per-sample metric value (booleans are 0/1); ``None`` if it is not one."""
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return None


class _RepeatedKeys(ValueError):
    """A JSON object names a key twice (``json`` would keep only the last value)."""


def _object_without_repeats(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [key for key, _ in pairs]
    repeated = list(dict.fromkeys(key for i, key in enumerate(keys) if key in keys[:i]))
    if repeated:
        raise _RepeatedKeys(f"repeated key(s) {limit_listing(repeated)} in one object")
    return dict(pairs)


def parse_json(text: str | bytes) -> Any:
    """JSON with every object's keys unique (a repeated key is an error, not the last value)."""
    return json.loads(text, object_pairs_hook=_object_without_repeats)


def _json_lines(path: Path) -> list[tuple[int, Any]]:
    """``(line number, parsed record)``; bad bytes, bad JSON and repeated keys name the line."""
    records, problems = [], []
    for number, raw in enumerate(path.read_bytes().splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            records.append((number, parse_json(raw.decode("utf-8"))))
        except UnicodeDecodeError as exc:
            problems.append(
                f"{path.name} line {number}: not UTF-8 (byte {exc.start} of the line: "
                f"{raw[exc.start : exc.start + 1]!r})"
            )
        except json.JSONDecodeError as exc:
            problems.append(f"{path.name} line {number}: invalid JSON ({exc.msg})")
        except _RepeatedKeys as exc:
            problems.append(f"{path.name} line {number}: {exc} (JSON would keep only the last value)")
    if problems:
        raise ResponseDataError(problems[:50], source=str(path))
    return records


def _json_file(path: Path) -> Any:
    try:
        return parse_json(path.read_bytes().decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ResponseDataError([f"{path.name} is not UTF-8 (byte {exc.start})"], source=str(path)) from None
    except json.JSONDecodeError as exc:
        raise ResponseDataError(
            [f"{path.name}: invalid JSON ({exc.msg}, line {exc.lineno})"], str(path)
        ) from None
    except _RepeatedKeys as exc:
        raise ResponseDataError(
            [f"{path.name}: {exc} (JSON would keep only the last value)"], str(path)
        ) from None


# --------------------------------------------------------------------- py-irt
def read_pyirt(path: str | Path, *, metric: Any = None, filter: Any = None) -> tuple[pd.DataFrame, None]:
    """py-irt JSON lines: one ``{"subject_id": ..., "responses": {item: value}}`` per LLM."""
    path = Path(path)
    if not path.is_file():
        raise ResponseDataError([f"file not found: {path}"])
    refuse_git_lfs_pointers([path], path)
    rows, problems, empty = [], [], []
    for number, record in _json_lines(path):
        if not isinstance(record, dict) or "subject_id" not in record or "responses" not in record:
            problems.append(f"line {number}: not a py-irt record (needs 'subject_id' and 'responses')")
            continue
        subject, responses = record["subject_id"], record["responses"]
        if isinstance(subject, bool) or not isinstance(subject, str | int) or not str(subject).strip():
            problems.append(
                f"line {number}: 'subject_id' must be a non-empty text or whole-number id, got {subject!r}"
            )
            continue
        if not isinstance(responses, dict):
            problems.append(
                f"line {number}: 'responses' must map item ids to values, got a {type(responses).__name__}"
            )
            continue
        if not responses:
            empty.append(str(subject))
        for item, value in responses.items():
            number_value = _scalar(value) if value is not None else np.nan
            if number_value is None:
                problems.append(f"line {number}: response to {item!r} is not a number: {value!r}")
                continue
            rows.append((str(subject), str(item), number_value))
    if empty:
        problems.append(
            f"{len(empty)} LLM(s) with no responses (nothing to fit them on): {limit_listing(empty)}; "
            "remove their lines"
        )
    if problems:
        raise ResponseDataError(problems[:50], source=str(path))
    if not rows:
        raise ResponseDataError(["the file holds no responses"], source=str(path))
    return pd.DataFrame(rows, columns=LONG_COLUMNS), None


# -------------------------------------------------------- lm-evaluation-harness
_SAMPLES_FILE = re.compile(r"samples_(?P<task>.+?)_(?P<date>\d{4}-\d{2}-\d{2}T[\w.\-]+)\.jsonl$")


def read_lm_eval(
    folder: str | Path,
    *,
    metric: str | Mapping[str, str] | None = None,
    filter: str | Mapping[str, str] | None = None,
    run: str | Mapping[str, str] | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """lm-evaluation-harness per-sample logs (``--log_samples``), of every version since 0.4.0.

    From 0.4.3 on: one folder per model under ``folder``, each with
    ``samples_<task>_<date>.jsonl`` (one sample per line) and ``results_<date>.json``; the LLM
    is the results file's ``model_name`` (else the folder name) and the newest log per model
    and task is read. 0.4.0–0.4.2 wrote ``results.json`` beside ``<model_args>_<task>.jsonl``
    (``/`` and ``=`` in the model arguments as ``__``) holding one JSON array; the LLM is the
    ``pretrained=`` (else ``model=`` or ``path=``) model argument, and a task logged once per
    filter is told apart by the order of its config's ``filter_list``, as those versions wrote it.

    Items are ``<task>:<doc_id>``; the benchmark is the task's top-level group in
    ``group_subtasks`` (``mmlu`` for ``mmlu_anatomy``), else the task, and the subgroup is
    the task. ``metric`` (default ``acc``) and ``filter`` may be mappings per task; a task
    that logs several filters needs ``filter``. ``run`` chooses among reruns of 0.4.3+ logs
    by the date in their file names (``"2024-06-01"`` or the full
    ``"2024-06-01T10-00-00.123456"``; a prefix): every model and task must have exactly one
    log of that date, else the error lists the dates each has. A mapping task → date chooses
    per task (tasks it does not name take their newest log; a task it names that no model
    logged is an error).

    Reruns whose results files give the task different ``n-shot`` (a 5-shot rerun of a 0-shot
    run) are named in a warning. A results file renamed after the run (``<anything>_<date>.json``
    with the samples' date) still names the model. A metric the results file marks
    ``higher_is_better: false`` (an error such as ``mae``, a perplexity) is refused: item
    response models read a higher score as a better answer.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise ResponseDataError([f"folder not found: {folder}"])
    logs = _sample_logs(folder, run)
    if run is not None and not logs:
        raise ResponseDataError(
            [
                f"run={run!r} chooses among dated samples_<task>_<date>.jsonl logs (0.4.3 and later); "
                f"{folder} has none"
            ]
        )
    logs = logs or _array_logs(folder)
    if not logs:
        raise ResponseDataError(
            [
                f"no lm-evaluation-harness sample logs under {folder}: samples_<task>_<date>.jsonl "
                "(0.4.3 and later) or results.json beside <model_args>_<task>.jsonl (0.4.0-0.4.2)"
            ]
        )
    rows, problems, tasks, read = [], [], {}, {}
    grouped = _GroupedProblems()
    groups: dict[str, str] = {}
    known_tasks = {log.task for log in logs}
    problems += _unknown_keys(metric, "metric", known_tasks) + _unknown_keys(filter, "filter", known_tasks)
    for log in logs:
        groups.update(log.groups)
        file, task = log.file, log.task
        where = str(file.relative_to(folder))
        task_metric = _task_setting(metric, task) or ("acc" if metric is None else None)
        if task_metric is None:
            problems.append(f"task {task!r} has no entry in the metric mapping")
            continue
        records = log.records()
        filters = list(dict.fromkeys(r.get("filter") for _, r in records if isinstance(r, dict)))
        chosen = _task_setting(filter, task)
        if chosen is None and len(filters) > 1:
            grouped.add(
                f"task {task!r} logs each doc once per filter {filters}; pass "
                f"filter= (one of them, or a task → filter mapping)",
                where,
            )
            continue
        if chosen is not None and chosen not in filters:
            grouped.add(f"task {task!r} has no filter {chosen!r} (its filters: {filters})", where)
            continue
        named = {str(m) for _, r in records if isinstance(r.get("metrics"), list) for m in r["metrics"]}
        numbers = {k for _, r in records for k, v in r.items() if _scalar(v) is not None} - {"doc_id"}
        offered = sorted(named or numbers)  # 0.4.3+ names its metrics in each sample
        if log.higher_is_better.get(task_metric) is False:
            better = sorted(m for m, higher in log.higher_is_better.items() if higher)
            grouped.add(
                f"task {task!r}: its results file marks {task_metric!r} lower-is-better "
                "(higher_is_better: false), and item response models read a higher score as a "
                f"better answer; choose a higher-is-better metric ({better or 'the task has none'})",
                where,
            )
            continue
        read[task] = (
            f"metric {task_metric!r}" + (f", filter {chosen!r}" if chosen else "") + f" ({log.variant}; "
            f"metrics logged: {offered}" + (f"; filters: {filters}" if len(filters) > 1 else "") + ")"
        )
        for number, record in records:
            if chosen is not None and record.get("filter") != chosen:
                continue
            if "doc_id" not in record:
                grouped.add("samples without doc_id", where, number)
                continue
            scalars = sorted(k for k, v in record.items() if _scalar(v) is not None and k != "doc_id")
            if not scalars:
                grouped.add(
                    f"task {task!r} has no per-sample number: its metric(s) {sorted(named) or offered} are "
                    "aggregated over the whole task (a corpus-level score such as F1 or BLEU), so its "
                    "samples give no item scores; leave the task out",
                    where,
                )
                continue
            if task_metric not in record:
                grouped.add(
                    f"task {task!r} logs no metric {task_metric!r} (its per-sample numbers: {scalars})", where
                )
                continue
            value = _scalar(record[task_metric])
            if value is None:
                grouped.add(
                    f"task {task!r}: {task_metric!r} is a {type(record[task_metric]).__name__}, not one "
                    f"number per sample (its per-sample numbers: {scalars})",
                    where,
                )
                continue
            item = f"{task}:{record['doc_id']}"
            rows.append((log.model, item, value))
            tasks[item] = task
    problems += grouped.lines()
    if problems:
        if len(known_tasks) > 1 and not isinstance(metric, Mapping):
            problems.append("pass metric={task: metric} for folders that mix differently scored tasks")
        raise ResponseDataError(problems[:50], source=str(folder))
    meta = pd.DataFrame(
        {
            "item": list(tasks),
            "benchmark": [_top_group(t, groups) for t in tasks.values()],
            "subgroup": list(tasks.values()),
        }
    )
    return _long_frame(rows, read), meta


@dataclass(frozen=True)
class _SampleLog:
    """One model's per-sample log of one task, however the harness's version wrote it."""

    model: str
    task: str
    file: Path
    groups: dict[str, str]
    records: Callable[[], list[tuple[int, Any]]]
    variant: str
    higher_is_better: dict[str, bool]


def _sample_logs(folder: Path, run: str | Mapping[str, str] | None = None) -> list[_SampleLog]:
    """0.4.3 and later: one ``samples_<task>_<date>.jsonl`` per model folder and task.

    The newest, or the one whose date starts with ``run`` (or with ``run[task]``).
    """
    files = sorted(folder.rglob("samples_*.jsonl"))
    refuse_git_lfs_pointers([*files, *folder.rglob("results*.json")], folder)
    runs: dict[tuple[Path, str], dict[str, Path]] = {}
    for file in files:  # sorted: within a model and task, the latest date comes last
        match = _SAMPLES_FILE.match(file.name)
        task = match["task"] if match else file.stem.removeprefix("samples_")
        runs.setdefault((file.parent, task), {})[match["date"] if match else ""] = file
    per_task = isinstance(run, Mapping)
    if per_task and files:
        unknown = sorted(set(run) - {task for _, task in runs})
        if unknown:
            tasks = sorted({task for _, task in runs})
            raise ResponseDataError(
                [f"run= names task(s) {unknown} that no model logged (tasks: {tasks})"], source=str(folder)
            )
    chosen, problems = {}, []
    for key, dated in runs.items():
        date = run.get(key[1]) if per_task else run
        picked = list(dated) if date is None else [d for d in dated if d and d.startswith(str(date))]
        if date is not None and len(picked) != 1:
            where = f"{key[0].relative_to(folder) if key[0] != folder else '.'}, task {key[1]!r}"
            dates = ", ".join(d or "(undated)" for d in dated)
            problems.append(f"{where}: {len(picked)} logs dated {date!r} (its logs: {dates})")
            continue
        chosen[key] = (dated[picked[-1]], len(dated), date)
    if problems:
        raise ResponseDataError([*problems, "run= must name one log per model and task"], source=str(folder))
    logs = []
    run_results = functools.cache(_run_results)  # one read per run, however many of its tasks are asked
    for (model_dir, task), (file, n_runs, date) in chosen.items():
        differ = n_runs > 1 and date is None
        shots = _shots_differ(model_dir, task, runs[model_dir, task], run_results) if differ else None
        if shots:
            where = model_dir.relative_to(folder) if model_dir != folder else folder.name
            listed = ", ".join(f"{d}: {n}" for d, n in shots.items())
            warnings.warn(
                f"lm_eval task {task!r} in {where}: its {n_runs} runs differ in n-shot ({listed}); "
                f"the newest is read ({file.name}); pass run= (a date) to choose another",
                UserWarning,
                stacklevel=4,
            )
        model, groups, better = _lm_eval_results(model_dir, folder, _SAMPLES_FILE.match(file.name))
        reader = functools.partial(_json_lines, file)
        variant = "0.4.3+ samples_<task>_<date>.jsonl" + (
            f"; {file.name} of {n_runs} runs ({'run=' + repr(date) if date else 'newest'})"
            if n_runs > 1
            else ""
        )
        logs.append(_SampleLog(model, task, file, groups, reader, variant, better.get(task, {})))
    return logs


def _array_logs(folder: Path) -> list[_SampleLog]:
    """0.4.0-0.4.2: ``results.json`` beside ``<model_args>_<task>.jsonl`` arrays."""
    results_files = sorted(folder.rglob("results.json"))
    refuse_git_lfs_pointers(results_files, folder)
    logs = []
    for results_file in results_files:
        results = _json_file(results_file)
        config = results.get("config") if isinstance(results, dict) else None
        if not isinstance(config, dict) or "model_args" not in config:
            continue
        model_args = str(config["model_args"] or "")
        prefix = re.sub("/|=", "__", model_args)
        arguments = dict(part.partition("=")[::2] for part in model_args.split(",") if "=" in part)
        model = next((arguments[k] for k in ("pretrained", "model", "path") if arguments.get(k)), None)
        model = model or model_args or str(config.get("model") or results_file.parent.name)
        groups = {
            str(m): str(g) for g, members in (results.get("group_subtasks") or {}).items() for m in members
        }
        better = _higher_is_better(results)
        for task, task_config in (results.get("configs") or {}).items():
            file = results_file.parent / f"{prefix}_{task}.jsonl"
            if file.is_file():
                refuse_git_lfs_pointers([file], folder)
                names = [
                    f.get("name") for f in (task_config or {}).get("filter_list") or [] if isinstance(f, dict)
                ]
                reader = functools.partial(_array_records, file, names)
                variant = "0.4.0-0.4.2 <model_args>_<task>.jsonl arrays"
                logs.append(
                    _SampleLog(model, str(task), file, groups, reader, variant, better.get(str(task), {}))
                )
    return logs


def _array_records(file: Path, filter_names: list[str]) -> list[tuple[int, Any]]:
    """An array log's samples (numbered from 1), each labelled with its filter where docs repeat."""
    samples = _json_file(file)
    if not isinstance(samples, list):
        raise ResponseDataError([f"{file.name}: expected a JSON array of samples"], source=str(file))
    records = [(number, sample) for number, sample in enumerate(samples, start=1) if isinstance(sample, dict)]
    seen: dict[Any, int] = {}
    repeats = []
    for _, sample in records:
        key = json.dumps(sample.get("doc_id"))
        seen[key] = seen.get(key, 0) + 1
        repeats.append(seen[key] - 1)
    times = max(seen.values(), default=1)
    if times > 1:
        if len(filter_names) != times:
            raise ResponseDataError(
                [
                    f"{file.name}: each doc is logged {times} times but the task's config names "
                    f"{len(filter_names)} filter(s) {filter_names}; the samples cannot be told apart"
                ],
                source=str(file),
            )
        for (_, sample), k in zip(records, repeats, strict=True):
            sample.setdefault("filter", filter_names[k])
    return records


def _lm_eval_results(
    model_dir: Path, root: Path, samples: re.Match | None = None
) -> tuple[str, dict[str, str], dict[str, dict[str, bool]]]:
    """The model name, the task → parent-group map and :func:`_higher_is_better` of a run.

    From the results file of the same date as the ``samples`` log: ``results_<date>.json``,
    else a renamed ``<anything>_<date>.json`` that holds ``results``; else the newest
    ``results_*.json``.
    """
    fallback = str(model_dir.relative_to(root)) if model_dir != root else model_dir.name
    data = _run_results(model_dir, samples["date"]) if samples is not None else None
    if data is None:
        results = sorted(model_dir.glob("results_*.json"))
        if not results:
            return fallback, {}, {}
        data = _json_file(results[-1])
    name = data.get("model_name") or fallback
    parent = {}
    for group, members in (data.get("group_subtasks") or {}).items():
        for member in members:
            parent[str(member)] = str(group)
    return str(name), parent, _higher_is_better(data)


def _run_results(model_dir: Path, date: str) -> dict | None:
    """The results file of the run of ``date``, read; ``None`` when there is none.

    ``results_<date>.json``, else a renamed ``<anything>_<date>.json`` that holds ``results``.
    """
    named = model_dir / f"results_{date}.json"
    if named.is_file():
        return _json_file(named)
    for candidate in sorted(model_dir.glob(f"*_{glob.escape(date)}.json")):
        try:
            found = _json_file(candidate)
        except ResponseDataError:  # another file of that date, not the results
            continue
        if isinstance(found, dict) and isinstance(found.get("results"), dict):
            return found
    return None


def _shots_differ(
    model_dir: Path, task: str, dates: Iterable[str], run_results: Callable[[Path, str], dict | None]
) -> dict[str, Any] | None:
    """Each run's ``n-shot`` of ``task`` (date → shots) when the runs differ in it, else ``None``.

    ``run_results`` reads a run's results file (:func:`_run_results`, cached by the caller).
    """
    shots = {}
    for date in dates:
        results = run_results(model_dir, date) if date else None
        table = results.get("n-shot") if isinstance(results, dict) else None
        shots[date] = table.get(task) if isinstance(table, dict) else None
    known = {json.dumps(v) for v in shots.values() if v is not None}
    return shots if len(known) > 1 else None


def _higher_is_better(results: Any) -> dict[str, dict[str, bool]]:
    """A results file's ``higher_is_better`` (task → metric → bool); empty where absent."""
    table = results.get("higher_is_better") if isinstance(results, dict) else None
    if not isinstance(table, dict):
        return {}
    return {
        str(task): {str(m): flag for m, flag in metrics.items() if isinstance(flag, bool)}
        for task, metrics in table.items()
        if isinstance(metrics, dict)
    }


def _top_group(task: str, parent: dict[str, str]) -> str:
    seen = set()
    while task in parent and task not in seen:
        seen.add(task)
        task = parent[task]
    return task


# --------------------------------------------------- Open LLM Leaderboard details
_V2_CONFIG = re.compile(r"^(?P<model>.+?__.+?)__leaderboard_(?P<task>[A-Za-z0-9_]+)$")
_V1_CONFIG = re.compile(r"^harness_(?P<task>.+)_(?P<shots>\d+)$")
_V1_MODEL = re.compile(r"^(?:details_)?(?P<model>[^/]+?__[^/]+?)$")
_DETAILS_FILE = re.compile(r"^details_(?:(?P<suite>[^|]+)\|)?(?P<task>[^|]+)\|(?P<shots>\d+)_(?P<date>.+)$")
"""A details file as downloaded or as lighteval writes it: ``details_<suite>|<task>|<shots>_<date>``
(lighteval since November 2025 without the suite: ``details_<task>|<shots>_<date>``)."""
V2_FAMILIES = ("mmlu_pro", "bbh", "gpqa", "math", "musr", "ifeval")
V2_METRICS = {
    "bbh": "acc_norm",
    "gpqa": "acc_norm",
    "math": "exact_match",
    "mmlu_pro": "acc",
    "musr": "acc_norm",
    "ifeval": "prompt_level_strict_acc",
}
"""The metric the Open LLM Leaderboard v2 reports per family (the default ``metric``)."""
V1_METRICS = {
    "arc": "acc_norm",
    "hellaswag": "acc_norm",
    "mmlu": "acc",
    "truthfulqa": "mc2",
    "winogrande": "acc",
    "gsm8k": "acc",
    "drop": "f1",
}
"""The metric the Open LLM Leaderboard v1 reported per benchmark (its ``Tasks`` in
``src/display/utils.py``; the default ``metric``). TruthfulQA's ``mc2`` is a probability per
question, not 0/1: read it as ``response_type="continuous"``, or pass ``metric="mc1"``."""


def oll_config(path: Path) -> tuple[str, str | None, str] | None:
    """``(version, model, task)`` from an Open LLM Leaderboard details file's path, or ``None``.

    The version is ``v2`` (``<org>__<model>__leaderboard_<task>`` configs), ``v1``
    (``harness_<task>_<shots>`` configs, or ``details_harness|<task>|<shots>_<date>`` files as
    the leaderboard's details repositories hold them, under ``details_<org>__<model>``) or
    ``lighteval`` (``details_<suite>|<task>|<shots>_<date>`` files, since lighteval's PR #1038
    of November 2025 ``details_<task>|<shots>_<date>``, under ``details/<org>/<model>/<timestamp>/``
    or, for a model without an organisation, ``details/<model>/<timestamp>/``, as lighteval's
    ``--save-details`` writes them).
    """
    if match := _DETAILS_FILE.match(path.stem):
        version = "v1" if match["suite"] == "harness" else "lighteval"
        model = next((m["model"] for p in path.parents if (m := _V1_MODEL.match(p.name))), None)
        parents = path.parents
        if model is None and len(parents) > 3 and parents[3].name == "details":
            model = f"{parents[2].name}__{parents[1].name}"
        elif model is None and len(parents) > 2 and parents[2].name == "details":
            model = parents[1].name
        return version, model, match["task"]
    for part in (path.stem, *(p.name for p in path.parents)):
        if match := _V2_CONFIG.match(part):
            return "v2", match["model"], match["task"]
        if match := _V1_CONFIG.match(part):
            model = next(
                (
                    m["model"]
                    for p in path.parents
                    if (m := _V1_MODEL.match(p.name)) and not _V1_CONFIG.match(p.name)
                ),
                None,
            )
            return "v1", model, match["task"]
    return None


def _oll_benchmark(version: str, task: str) -> tuple[str, str]:
    """``(benchmark, subgroup)`` of a details config's task."""
    if version == "v2":
        family = next((f for f in V2_FAMILIES if task == f or task.startswith(f + "_")), task)
        return family, task
    for prefix in ("hendrycksTest_", "hendrycksTest-"):
        if task.startswith(prefix):
            return "mmlu", task.removeprefix(prefix)
    return task.split(":")[0], task  # arc:challenge, truthfulqa:mc, mmlu:anatomy


def read_oll_details(
    source: str | Path, *, metric: str | Mapping[str, str] | None = None, filter: Any = None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Open LLM Leaderboard details Parquet files (v1 ``harness_*`` and v2 ``leaderboard_*`` configs).

    ``source`` is one file or a folder of them; each file's config (and, for v1, the
    ``details_<org>__<model>`` folder it sits in) says the model and the task. Items are
    ``<task>:<doc_id>``: the ``doc_id`` column, or the ``id`` of lighteval's ``doc`` struct
    (its rows need not be in document order), else (v1 files) the row position, the order the
    harness evaluated the documents in. The metric is ``metric`` (a name, or a mapping
    per benchmark or task), by default the one the leaderboard reports
    (:data:`V1_METRICS`, :data:`V2_METRICS`; ``acc`` for lighteval's own details), read from
    its column or from the ``metrics`` struct.
    """
    source = Path(source)
    files = [source] if source.is_file() else sorted(source.rglob("*.parquet"))
    newest = {}
    for file in files:  # sorted: a rerun's file (a later date in its name) comes last
        if (config := oll_config(file)) is not None:
            newest[config if _DETAILS_FILE.match(file.stem) else (config, file)] = (file, config)
    configs = list(newest.values())
    if not configs:
        raise ResponseDataError(
            [f"no Open LLM Leaderboard details files (harness_* or *__leaderboard_*) in {source}"]
        )
    refuse_git_lfs_pointers([f for f, _ in configs], source)
    rows, problems, meta, read = [], [], {}, {}
    grouped = _GroupedProblems()
    known = {t for _, (v, _, t) in configs} | {_oll_benchmark(v, t)[0] for _, (v, _, t) in configs}
    problems += _unknown_keys(metric, "metric", known)
    for file, (version, model, task) in configs:
        if model is None:
            problems.append(
                f"{file}: cannot tell the model (the leaderboard's files sit in a "
                "details_<org>__<model> folder, lighteval's in details/<org>/<model>/<timestamp>/)"
            )
            continue
        benchmark, subgroup = _oll_benchmark(version, task)
        name = _task_setting(metric, task) or _task_setting(metric, benchmark)
        if name is None:
            name = {"v2": V2_METRICS, "v1": V1_METRICS}.get(version, {}).get(benchmark, "acc")
        try:
            table = pd.read_parquet(file)
        except Exception as exc:
            problems.append(f"{file.name}: not readable as Parquet ({type(exc).__name__}: {exc})")
            continue
        values = _oll_metric(table, name)
        if isinstance(values, str):
            grouped.add(
                f"task {task!r}: {values}", str(file.relative_to(source)) if file != source else file.name
            )
            continue
        read[task] = f"metric {name!r} ({version} details; numbers per row: {_oll_offered(table)})"
        doc_ids = _oll_doc_ids(table)
        llm = model.replace("__", "/", 1)
        for doc_id, value in zip(doc_ids, values, strict=True):
            item = f"{task}:{doc_id}"
            rows.append((llm, item, value))
            meta[item] = (benchmark, subgroup)
    problems += grouped.lines()
    return _finished(rows, meta, read, problems, source)


def _oll_doc_ids(table: pd.DataFrame) -> list[str]:
    """Each row's document id.

    The ``doc_id`` column (the leaderboard's v2 files), the ``id`` in lighteval's ``doc``
    struct (lighteval 0.13 wrote its rows out of document order), else the
    row position (the v1 files, in the order the harness evaluated them).
    """
    if "doc_id" in table:
        return table["doc_id"].astype(str).tolist()
    if "doc" in table and all(isinstance(d, dict) and d.get("id") not in (None, "") for d in table["doc"]):
        return [str(d["id"]) for d in table["doc"]]
    return [str(i) for i in range(len(table))]


def _oll_offered(table: pd.DataFrame) -> list[str]:
    """The per-row numbers a details table holds: numeric columns and the metric structs' keys."""
    columns = [str(c) for c in table.columns if pd.api.types.is_numeric_dtype(table[c]) and c != "doc_id"]
    nested = {
        k for c in ("metrics", "metric") if c in table for v in table[c] if isinstance(v, dict) for k in v
    }
    return sorted(set(columns) | nested)


def _oll_metric(table: pd.DataFrame, name: str) -> list[float] | str:
    """The metric's values, or a sentence saying why they cannot be read."""
    structs = [c for c in ("metrics", "metric") if c in table.columns]  # harness, lighteval
    if name in table.columns:
        column = table[name]
    elif found := [c for c in structs if all(isinstance(v, dict) and name in v for v in table[c])]:
        column = table[found[0]].map(lambda v: v[name])
    else:
        nested = sorted({k for c in structs for v in table[c] if isinstance(v, dict) for k in v})
        return f"no metric {name!r} (columns: {list(table.columns)[:20]}; metrics: {nested})"
    values = [_scalar(v.item() if hasattr(v, "item") else v) for v in column]
    if any(v is None for v in values):
        return f"metric {name!r} is not one number per row"
    return values


# ---------------------------------------------------------------------- HELM
def read_helm(
    folder: str | Path,
    *,
    metric: str | Mapping[str, str] | None = None,
    filter: Any = None,
    split: str | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """HELM run folders (``per_instance_stats.json`` beside ``run_spec.json``).

    The LLM is the run spec's ``adapter_spec.model``; items are
    ``<run name without model=…>/<instance_id>`` (the same scenario and adaptation across
    models); the benchmark is the run's first group (else the scenario name) and the
    subgroup the run name without the model. Unperturbed instances of one split only
    (``split``; a run without it names the splits it has); the metric (or a mapping per
    benchmark) is each stat's ``mean``. By default both are what HELM reports for the run:
    the ``main_name`` and ``main_split`` of the first of the run's groups that
    ``helm-summarize``'s ``schema.json`` (in the suite folder) gives them, else
    ``exact_match`` and ``"test"``. Problems are gathered per kind, each naming every run it
    concerns: a metric no instance has (with the stats the runs do have), instances of the
    split without the metric or with no value, runs with several train trials.
    """
    folder = Path(folder)
    stats_files = sorted(folder.rglob("per_instance_stats.json"))
    if not stats_files:
        raise ResponseDataError([f"no per_instance_stats.json under {folder}"])
    refuse_git_lfs_pointers([*stats_files, *folder.rglob("run_spec.json")], folder)
    rows, meta, problems, read = [], {}, [], {}
    schemas: dict[Path, dict] = {}
    without_metric: dict[tuple[str, tuple[str, ...]], list[str]] = {}
    without_split: dict[tuple[str, ...], list[str]] = {}
    incomplete: list[str] = []
    benchmarks: set[str] = set()
    for stats_file in stats_files:
        run = stats_file.parent
        spec_file = run / "run_spec.json"
        if not spec_file.is_file():
            problems.append(f"{run.name}: per_instance_stats.json without run_spec.json")
            continue
        spec = _json_file(spec_file)
        adapter = spec.get("adapter_spec", {})
        model = adapter.get("model") or adapter.get("model_deployment")
        if not model:
            problems.append(f"{run.name}/run_spec.json: no adapter_spec.model")
            continue
        scenario = _without_model(str(spec.get("name", run.name)))
        groups = spec.get("groups") or []
        benchmark = str(groups[0]) if groups else scenario.split(":")[0]
        benchmarks.add(benchmark)
        main = _helm_main(run.parent, groups, schemas)
        name = _task_setting(metric, benchmark) or (
            main.get("main_name", "exact_match") if metric is None else None
        )
        run_split = main.get("main_split", "test") if split is None else str(split)
        if name is None:
            problems.append(f"{run.name}: benchmark {benchmark!r} has no entry in the metric mapping")
            continue
        entries, conflicts = _merged_instances(e for e in _json_file(stats_file) if not e.get("perturbation"))
        if conflicts:
            problems.append(
                f"{run.name}: {len(conflicts)} instance(s) list a stat twice with different means "
                f"({limit_listing(conflicts, 5)})"
            )
            continue
        trials = sorted({int(e.get("train_trial_index", 0)) for e in entries})
        if len(trials) > 1:
            problems.append(f"{run.name}: {len(trials)} train trials {trials}; evaluate with one trial")
            continue
        chosen, stat_names, splits = [], set(), set()
        for entry in entries:
            stats = [st for st in entry.get("stats", []) if not st.get("name", {}).get("perturbation")]
            stat_names.update(str(st.get("name", {}).get("name")) for st in stats)
            entry_splits = {st.get("name", {}).get("split") for st in stats} - {None}
            splits.update(entry_splits)
            if entry_splits and run_split not in entry_splits:
                continue
            value = next((st for st in stats if st.get("name", {}).get("name") == name), None)
            chosen.append((entry, value))
        if name not in stat_names:
            aggregate_only = _in_run_stats(run, name, run_split)
            without_metric.setdefault((name, tuple(sorted(stat_names)), aggregate_only), []).append(run.name)
            continue
        if not chosen:
            without_split.setdefault((run_split, tuple(sorted(map(str, splits)))), []).append(run.name)
            continue
        source = f"; schema.json's main metric of {main['group']!r}" if "group" in main else ""
        read[scenario] = (
            f"stat {name!r}, split {run_split!r} "
            f"(splits: {sorted(map(str, splits))}; stats: {sorted(stat_names)}{source})"
        )
        missing = 0
        for entry, value in chosen:
            mean = _stat_mean(value)
            if mean is None:
                missing += 1
                continue
            item = f"{scenario}/{entry['instance_id']}"
            rows.append((str(model), item, mean))
            meta[item] = (benchmark, scenario)
        if missing:
            incomplete.append(f"{run.name} ({missing} of {len(chosen)})")
    for (name, available, aggregate_only), runs in without_metric.items():
        only = (
            f"; {name!r} is in their stats.json only (a metric of the whole run, with no value per instance)"
            if aggregate_only
            else ""
        )
        problems.append(
            f"no unperturbed instance has the stat {name!r} in {len(runs)} run(s) "
            f"({limit_listing(runs, 5)}){only}; their stats: {limit_listing(available, 30)}; pass metric="
        )
    for (wanted, found), runs in without_split.items():
        problems.append(
            f"{len(runs)} run(s) have no {wanted!r} instances ({limit_listing(runs, 5)}); their splits: "
            f"{list(found)}; pass split="
        )
    problems += _unknown_keys(metric, "metric", benchmarks)
    if incomplete:
        problems.append(
            f"instances of the chosen split without a value of the metric, in {len(incomplete)} "
            f"run(s): {limit_listing(incomplete, 5)}; choose a metric every instance has"
        )
    return _finished(rows, meta, read, problems, folder)


def _merged_instances(entries: Iterable[Mapping[str, Any]]) -> tuple[list[dict[str, Any]], list[str]]:
    """One entry per instance and train trial, its stats gathered from every entry that lists it.

    HELM writes an instance once per group of metrics when a run has annotators (its safety
    runs: the annotator's scores in one entry, the token counts in another). Returns the merged
    entries in first-seen order and the instances that give one stat two different means.
    """
    merged: dict[tuple[str, int], dict[str, Any]] = {}
    conflicts: list[str] = []
    for entry in entries:
        key = (str(entry.get("instance_id")), int(entry.get("train_trial_index", 0)))
        if key not in merged:
            merged[key] = {**entry, "stats": list(entry.get("stats", []))}
            continue
        seen = {_stat_key(st): _stat_mean(st) for st in merged[key]["stats"]}
        for stat in entry.get("stats", []):
            if _stat_key(stat) not in seen:
                merged[key]["stats"].append(stat)
            elif seen[_stat_key(stat)] != _stat_mean(stat) and key[0] not in conflicts:
                conflicts.append(key[0])
    return list(merged.values()), conflicts


def _stat_key(stat: Mapping[str, Any]) -> str:
    """A HELM stat's identity: its ``name`` object (name, split, sub-split, perturbation)."""
    return json.dumps(stat.get("name", {}), sort_keys=True)


def _in_run_stats(run: Path, name: str, split: str) -> bool:
    """Whether the run's aggregate ``stats.json`` has the unperturbed stat ``name`` of ``split``."""
    aggregate = run / "stats.json"
    if not aggregate.is_file():
        return False
    return any(
        st.get("name", {}).get("name") == name
        and st.get("name", {}).get("split") == split
        and not st.get("name", {}).get("perturbation")
        for st in _json_file(aggregate)
        if isinstance(st, dict)
    )


def _helm_schema_groups(suite: Path) -> dict[str, dict[str, str]]:
    """Run group → its ``environment`` (``main_name``, ``main_split``) from ``schema.json``."""
    schema = suite / "schema.json"
    if not schema.is_file():
        return {}
    groups = _json_file(schema).get("run_groups") or []
    return {
        str(g["name"]): {k: str(v) for k, v in (g.get("environment") or {}).items() if isinstance(v, str)}
        for g in groups
        if isinstance(g, dict) and "name" in g
    }


def _helm_main(suite: Path, groups: list, schemas: dict[Path, dict]) -> dict[str, str]:
    """The main metric and split HELM reports for a run: those of its first group the schema gives them.

    ``schemas`` caches each suite folder's schema for one read.
    """
    if suite not in schemas:
        schemas[suite] = _helm_schema_groups(suite)
    known = schemas[suite]
    for group in map(str, groups):
        environment = known.get(group, {})
        if "main_name" in environment:
            return {"group": group, **environment}
    return {}


def _stat_mean(stat: Mapping[str, Any] | None) -> float | None:
    """A HELM stat's mean (else ``sum / count``); ``None`` when the stat is absent or has no number."""
    if stat is None:
        return None
    mean = _scalar(stat.get("mean"))
    if mean is None:
        total, count = _scalar(stat.get("sum")), _scalar(stat.get("count"))
        mean = total / count if total is not None and count else None
    return None if mean is None or not np.isfinite(mean) else mean


def _without_model(run_name: str) -> str:
    """A HELM run name without its ``model=`` / ``model_deployment=`` arguments."""
    scenario, _, arguments = run_name.partition(":")
    kept = [a for a in arguments.split(",") if a and not a.startswith(("model=", "model_deployment="))]
    return f"{scenario}:{','.join(kept)}" if kept else scenario


# ---------------------------------------------------------------- OpenCompass
_CORRECT_KEYS = ("cascade_correct", "correct", "is_correct")
_JUDGE_RESULT_KEYS = ("attempted_ratio", "correct_count")
"""Keys of a result scored by an LLM judge (``generic_llmjudge_postprocess``): its details are
the judge's raw outputs, graded ``A`` (correct) or ``B``."""
_SUBJECTIVE_MARK = "_judged-by--"
_UNSCORED_DETAILS = (
    "details OpenCompass formatted itself (type 'GEN': each example's prediction and reference) "
    "because the dataset's evaluator recorded no per-example correctness, only the dataset's "
    "score; evaluate it with an evaluator that records each example's correctness (such as "
    "AccwithDetailsEvaluator) or leave the dataset out"
)


def read_opencompass(
    folder: str | Path, *, metric: Any = None, filter: Any = None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """An OpenCompass work folder's ``results/<model>/<dataset>.json`` evaluation details.

    The newest run folder per model and dataset is read; items are ``<dataset>:<index>``
    (the order of ``predictions/<model>/<dataset>.json``); the benchmark and the subgroup
    are the dataset. Each example's correctness is read as OpenCompass decides it: a
    ``cascade_correct`` / ``correct`` / ``is_correct`` value (a bool, a number, a one-element
    list, or a judge's grade letter ``A``/``B``), a cascade's ``llm_evaluation`` /
    ``rule_evaluation``, or, for results an LLM judge scored, the first ``A`` or ``B`` in the
    judge's output (``A`` is correct). Results without ``details`` (run without
    ``--dump-eval-details``) are errors, and so are ``GEN`` details OpenCompass formats itself
    when the evaluator records no per-example correctness (predictions and references only);
    subjective evaluations (``<model>_judged-by--<judge>``
    folders: pairwise comparisons and free-text grades) are refused, naming them.
    """
    folder = Path(folder)
    files = sorted(p for p in folder.rglob("*.json") if p.parent.parent.name == "results")
    if not files:
        raise ResponseDataError([f"no results/<model>/<dataset>.json under {folder}"])
    refuse_git_lfs_pointers(files, folder)
    subjective = sorted({f.parent.name for f in files if _SUBJECTIVE_MARK in f.parent.name})
    if subjective:
        raise ResponseDataError(
            [
                f"{len(subjective)} subjective evaluation folder(s) ({limit_listing(subjective, 5)}): "
                "a judge model's comparisons or grades of free text, not per-item correctness; read the "
                "objective datasets' results folders (run with --dump-eval-details) instead"
            ],
            source=str(folder),
        )
    newest: dict[tuple[str, str], Path] = {}
    for file in files:
        newest[(file.parent.name, file.stem)] = file
    rows, problems, meta, read = [], [], {}, {}
    grouped = _GroupedProblems()
    for (model, dataset), file in newest.items():
        result = _json_file(file)
        where = str(file.relative_to(folder))
        details = result.get("details") if isinstance(result, dict) else None
        if details is None:
            grouped.add("no 'details' (run OpenCompass with --dump-eval-details)", where)
            continue
        judged = any(key in result for key in _JUDGE_RESULT_KEYS)
        read[dataset] = (
            "an LLM judge's grade (A correct)" if judged else "each example's recorded correctness"
        )
        entries = (
            list(enumerate(details))
            if isinstance(details, list)
            else [(k, v) for k, v in details.items() if str(k).isdigit()]
        )
        values = [_opencompass_correct(detail, judged) for _, detail in entries]
        if isinstance(details, dict) and details.get("type") == "GEN" and all(v is None for v in values):
            grouped.add(_UNSCORED_DETAILS, where)
            continue
        for (index, _), value in zip(entries, values, strict=True):
            if value is None:
                grouped.add(
                    "examples whose details hold no correctness OpenCompass defines", where, int(index)
                )
                continue
            item = f"{dataset}:{index}"
            rows.append((model, item, value))
            meta[item] = (dataset, dataset)
    problems += grouped.lines()
    return _finished(rows, meta, read, problems, folder)


def _opencompass_correct(detail: Any, judged: bool) -> float | None:
    """An example's correctness as OpenCompass's evaluators record it (``None``: none recorded)."""
    if not isinstance(detail, dict):
        return None
    key = next((k for k in _CORRECT_KEYS if k in detail), None)
    if key is not None:
        return _verdict(detail[key])
    if isinstance(detail.get("llm_evaluation"), dict):  # CascadeEvaluator, in its own order
        llm = detail["llm_evaluation"]
        for name in ("llm_correct", "correct"):
            if name in llm:
                return _verdict(llm[name])
        if "prediction" in llm or "llm_judge" in llm:
            response = str(llm.get("prediction", llm.get("llm_judge", ""))).strip().upper()
            return float(response == "A" or response.startswith("CORRECT"))
    if isinstance(detail.get("rule_evaluation"), dict) and "correct" in detail["rule_evaluation"]:
        return _verdict(detail["rule_evaluation"]["correct"])
    if judged and isinstance(detail.get("prediction"), str):  # the judge's raw output
        grade = re.search("(A|B)", detail["prediction"])
        return float(grade is not None and grade.group(0) == "A")
    return None


def _verdict(value: Any) -> float | None:
    """``True``/``False``, a number, ``[True]`` or a judge's ``A``/``B`` as a number."""
    if isinstance(value, list) and len(value) == 1:
        value = value[0]
    if isinstance(value, str):
        text = value.strip()
        return {"A": 1.0, "B": 0.0}.get(text, {"true": 1.0, "false": 0.0}.get(text.lower()))
    return _scalar(value)


# ------------------------------------------------------------------ Inspect AI
INSPECT_VALUES = {"C": 1.0, "I": 0.0, "P": 0.5, "N": 0.0}
"""Inspect's default score letters (``value_to_float``): correct, incorrect, partial, no answer."""


def read_inspect(
    source: str | Path, *, metric: str | Mapping[str, str] | None = None, filter: Any = None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Inspect AI evaluation logs: ``.eval`` archives and ``.json`` logs (one file, or a folder).

    The LLM is the log's ``eval.model``, the benchmark its task (``task_display_name``), items
    ``<task>:<sample id>``. ``metric`` names the scorer (or a mapping task → scorer; default:
    the task's only scorer), ``scorer/key`` one entry of a scorer that scores several. Values
    are read as Inspect's ``value_to_float`` reads them (``C``/``I``/``P``/``N`` → 1/0/0.5/0,
    yes/no, true/false, numbers). The newest log per model and task is read. Samples scored
    in several epochs need ``filter="epoch=K"``; samples without a score are errors.
    """
    source = Path(source)
    files = [source] if source.is_file() else sorted([*source.rglob("*.eval"), *source.rglob("*.json")])
    refuse_git_lfs_pointers(files, source)
    newest: dict[tuple[str, str], tuple[str, Path, dict, list | None]] = {}
    for file in files:  # headers first: an archive's samples are read only for the log that is kept
        log = _inspect_log(file, samples=file.suffix == ".json")  # a .json log is one document
        if log is None:
            continue
        created, _, header, samples = log
        spec = header["eval"]
        task = str(spec.get("task_display_name") or str(spec.get("task", file.stem)).split("/")[-1])
        key = (str(spec.get("model")), task)
        if key not in newest or (created, str(file)) > (newest[key][0], str(newest[key][1])):
            newest[key] = (created, file, header, samples if file.suffix == ".json" else None)
    if not newest:
        raise ResponseDataError([f"no Inspect AI logs (.eval archives or .json logs) in {source}"])
    for key, (created, file, header, samples) in newest.items():
        if samples is None:
            newest[key] = (created, file, header, (_inspect_log(file) or (None, None, None, []))[3])
    epoch = _inspect_epoch(filter)
    rows, meta, problems, read = [], {}, [], {}
    problems += _unknown_keys(metric, "metric", {task for _, task in newest})
    grouped = _GroupedProblems()
    for (model, task), (_, file, _, samples) in newest.items():
        if not samples:
            grouped.add(
                f"task {task!r}: the log holds no samples (written with --no-log-samples?)", file.name
            )
            continue
        chosen = [s for s in samples if epoch is None or int(s.get("epoch", 1)) == epoch]
        epochs = sorted({int(s.get("epoch", 1)) for s in samples})
        if epoch is None and len(epochs) > 1:
            grouped.add(f"samples scored in {len(epochs)} epochs; pass filter='epoch=K'", file.name)
            continue
        scorers = sorted({name for s in chosen for name in (s.get("scores") or {})})
        name = _task_setting(metric, task)
        if name is None:
            if len(scorers) != 1:
                grouped.add(f"task {task!r} has the scorers {scorers}: pass metric= (one of them)", file.name)
                continue
            name = scorers[0]
        scorer, _, key = name.partition("/")
        read[task] = f"scorer {name!r} (scorers: {scorers}; epochs: {epochs})"
        for sample in chosen:
            score = (sample.get("scores") or {}).get(scorer)
            value = score.get("value") if isinstance(score, dict) else None
            if key and isinstance(value, dict):
                value = value.get(key)
            number = _inspect_value(value)
            if number is None:
                what = "no score" if score is None else f"a {type(value).__name__} value"
                grouped.add(
                    f"task {task!r}: samples with {what} from {name!r} (scorers: {scorers})", file.name
                )
                continue
            item = f"{task}:{sample.get('id')}"
            rows.append((model, item, number))
            meta[item] = (task, task)
    problems += grouped.lines()
    return _finished(rows, meta, read, problems, source)


def is_inspect_log(path: Path) -> bool:
    """Whether ``path`` is an Inspect AI log (a ``.eval`` archive, or a ``.json`` log with ``eval``)."""
    return _inspect_log(path, samples=False) is not None


ZIP_ZSTANDARD = 93
"""The zip compression method of Zstandard: Inspect AI writes its ``.eval`` archives with it
(through ``zipfile_zstd`` before Python 3.14, whose ``zipfile`` reads it natively)."""


def _zip_member(archive: zipfile.ZipFile, name: str) -> bytes:
    """One member of a zip archive, Zstandard-compressed members included."""
    info = archive.getinfo(name)
    if info.compress_type != ZIP_ZSTANDARD or hasattr(zipfile, "ZIP_ZSTANDARD"):
        return archive.read(name)
    import zstandard

    handle = archive.fp
    handle.seek(info.header_offset)
    local = handle.read(30)  # the local file header; its name and extra field lengths end it
    handle.seek(
        info.header_offset
        + 30
        + int.from_bytes(local[26:28], "little")
        + int.from_bytes(local[28:30], "little")
    )
    compressed = handle.read(info.compress_size)
    data = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(compressed), read_across_frames=True).read()
    if zlib.crc32(data) != info.CRC:
        raise zipfile.BadZipFile(f"bad CRC-32 for {name}")
    return data


def _inspect_log(path: Path, samples: bool = True) -> tuple[str, Path, dict, list] | None:
    """``(created, path, header, samples)`` of an Inspect log, else ``None``."""
    try:
        if path.suffix == ".eval":
            with zipfile.ZipFile(path) as archive:
                names = archive.namelist()
                if "header.json" not in names:
                    return None
                header = parse_json(_zip_member(archive, "header.json"))
                found = [
                    parse_json(_zip_member(archive, n))
                    for n in names
                    if samples and n.startswith("samples/") and n.endswith(".json")
                ]
        elif path.suffix == ".json":
            with path.open("rb") as handle:
                if b'"eval"' not in handle.read(4096):
                    return None
            header = _json_file(path)
            found = list(header.get("samples") or []) if isinstance(header, dict) else []
        else:
            return None
    except (zipfile.BadZipFile, OSError, json.JSONDecodeError, ValueError):
        return None
    if not isinstance(header, dict) or not isinstance(header.get("eval"), dict):
        return None
    return str(header["eval"].get("created", "")), path, header, found


def _inspect_value(value: Any) -> float | None:
    """A score value as Inspect's ``value_to_float`` reads it; ``None`` when it is not one number."""
    if isinstance(value, bool | int | float):
        return float(value)
    if isinstance(value, str):
        if value in INSPECT_VALUES:
            return INSPECT_VALUES[value]
        lowered = value.strip().lower()
        if lowered in ("yes", "true"):
            return 1.0
        if lowered in ("no", "false"):
            return 0.0
        try:
            return float(lowered)
        except ValueError:
            return None
    return None


def _inspect_epoch(filter: Any) -> int | None:
    if filter is None:
        return None
    text = str(filter)
    if not re.fullmatch(r"epoch=\d+", text):
        raise ResponseDataError([f"Inspect logs take filter='epoch=K' (one epoch), got {filter!r}"])
    return int(text.removeprefix("epoch="))


# ------------------------------------------------------------------ detection
READERS: dict[str, Reader] = {
    "pyirt": read_pyirt,
    "lm_eval": read_lm_eval,
    "oll_details": read_oll_details,
    "helm": read_helm,
    "opencompass": read_opencompass,
    "inspect": read_inspect,
}
"""The evaluation-tool formats ``load_responses`` reads, by ``format=`` name."""
FORMAT_NAMES = {
    "lm_eval": "lm-evaluation-harness sample logs",
    "helm": "HELM run folders",
    "opencompass": "OpenCompass evaluation details",
    "oll_details": "Open LLM Leaderboard details (Parquet)",
    "pyirt": "py-irt JSON lines",
    "inspect": "Inspect AI evaluation logs",
}


def detect_folder(path: Path) -> str | None:
    """Which evaluation tool wrote the results under ``path`` (``None``: none recognised)."""
    if next(path.rglob("samples_*.jsonl"), None) is not None:
        return "lm_eval"
    if any(next(r.parent.glob("*.jsonl"), None) is not None for r in path.rglob("results.json")):
        return "lm_eval"  # 0.4.0-0.4.2
    if next(path.rglob("per_instance_stats.json"), None) is not None:
        return "helm"
    if any(p.parent.parent.name == "results" for p in path.rglob("*.json")):
        return "opencompass"
    if any(oll_config(p) is not None for p in path.rglob("*.parquet")):
        return "oll_details"
    if any(is_inspect_log(p) for p in [*path.rglob("*.eval"), *path.rglob("*.json")]):
        return "inspect"
    return None
