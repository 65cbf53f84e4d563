"""Many independent fits on any ``concurrent.futures.Executor``, each saved as it finishes.

Restarts, cross-validation folds, dimension sweeps and subset evaluations are all
batches of independent tasks. :func:`run_batch` runs such a batch serially, on a
local process pool, or on any executor with the standard interface (a Dask
``Client.get_executor()``, Ray's ``ray.util.multiprocessing``-style pools, ...),
and returns the same results for the same seeds whichever ran it.

Every task is small (its settings and seed); the response matrix travels once per
worker: a process pool created here inherits it through ``fork``, a Dask client
receives it once through ``Client.scatter(..., broadcast=True)``; any other
executor gets it with every task.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import json
import multiprocessing
import os
import warnings
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

import xarray as xr

from benchmirt_bayes.integrity import CHECKSUM_ATTR, checksum_problem, with_checksum

ExecutorArg = Executor | Literal["auto", "serial"] | None
_TASK_ATTR = "benchmirt_task"
_DATA_ATTR = "benchmirt_task_data_hash"
_WORKER_DATA: dict[str, Any] = {}


class BatchTask(Protocol):
    """One unit of a batch: a file-safe ``key``, a ``fingerprint`` of its settings, and ``run``."""

    key: str

    @property
    def fingerprint(self) -> str:
        """A string that changes whenever the task would compute something different."""
        ...

    def run(self, shared: Any) -> xr.DataTree:
        """Compute the result from the shared object (usually the response matrix)."""
        ...


class BatchError(RuntimeError):
    """Some tasks of a batch failed; finished ones are kept (and saved when a folder was given)."""

    def __init__(self, failed: dict[str, BaseException], done: Sequence[str], folder: Path | None) -> None:
        self.failed = failed
        self.done = list(done)
        lines = [f"{len(failed)} of {len(failed) + len(done)} tasks failed:"]
        lines += [f"  {key}: {type(err).__name__}: {err}" for key, err in failed.items()]
        if folder is not None:
            lines.append(
                f"{len(done)} finished results are saved in {folder}; rerun the same call with the "
                "same folder to compute only the missing ones."
            )
        super().__init__("\n".join(lines))


@dataclass(frozen=True)
class _Shared:
    """The shared object, or only its hash when the worker already holds it."""

    data_hash: str
    payload: Any

    def get(self) -> Any:
        if self.payload is not None:
            return self.payload
        try:
            return _WORKER_DATA[self.data_hash]
        except KeyError:
            raise RuntimeError("worker process does not hold the shared data") from None


def _execute(task: BatchTask, data: Any) -> xr.DataTree:
    return task.run(data.get() if isinstance(data, _Shared) else data)


def fields_fingerprint(task: Any) -> str:
    """The default fingerprint: JSON of a dataclass task's fields (its full settings)."""
    return json.dumps(dataclasses.asdict(task), sort_keys=True, default=str)


def run_batch(
    tasks: Sequence[BatchTask],
    shared: Any,
    *,
    executor: ExecutorArg = "auto",
    results_dir: str | Path | None = None,
    cores_per_task: int = 1,
    fork_safe: bool = True,
    retries: int = 1,
    on_result: Callable[[str, xr.DataTree], None] | None = None,
) -> dict[str, xr.DataTree]:
    """Run every task and return ``{key: result}`` in the order of ``tasks``.

    Parameters
    ----------
    tasks
        Objects with ``key`` (unique, file-safe), ``fingerprint`` and
        ``run(responses) -> DataTree``.
    shared
        What every task reads (usually the :class:`ResponseMatrix`; any picklable
        object with a ``data_hash()`` method): sent once per worker where possible.
    executor
        Any ``concurrent.futures.Executor``; ``"auto"`` uses a local process
        pool (fork) when at least two tasks fit side by side on this machine's
        cores (``cores_per_task`` each), else runs in this process;
        ``"serial"`` or ``None`` runs in this process.
    results_dir
        Folder where each result is written (netCDF, ``<key>.nc``) the moment
        it comes back. A rerun with the same folder loads results whose
        fingerprint and data hash match and computes only the rest.
    cores_per_task
        Cores one task uses (NUTS chains run in parallel).
    fork_safe
        ``False`` for tasks that use JAX (not fork-safe): ``"auto"`` then runs serially.
    retries
        How many times a failed task is resubmitted before :class:`BatchError`. When a
        worker of the local pool dies (killed, out of memory), the pool breaks for every
        task it held: finished results are kept, and the unfinished tasks are resubmitted
        to a fresh pool, each counting one attempt. Dask reschedules a dead worker's task
        by itself.
    on_result
        Called with ``(key, result)`` as each result arrives (progress reporting).

    Raises
    ------
    BatchError
        Listing the tasks that still failed after ``retries``; finished results
        are kept in ``results_dir``.

    """
    keys = [task.key for task in tasks]
    if len(set(keys)) != len(keys):
        raise ValueError("task keys must be unique")
    folder = Path(results_dir) if results_dir is not None else None
    if folder is not None:
        folder.mkdir(parents=True, exist_ok=True)
    data_hash = shared.data_hash()
    results: dict[str, xr.DataTree] = {}
    pending = []
    for task in tasks:
        cached = _load(folder, task, data_hash) if folder is not None else None
        if cached is not None:
            results[task.key] = cached
        else:
            pending.append(task)

    def accept(task: BatchTask, tree: xr.DataTree) -> None:
        results[task.key] = tree
        if folder is not None:
            _store(folder, task, tree, data_hash)
        if on_result is not None:
            on_result(task.key, tree)

    resolved, owned = resolve_executor(executor, len(pending), cores_per_task, fork_safe)
    failed: dict[str, BaseException] = {}
    try:
        if resolved is None:
            for task in pending:
                accept(task, task.run(shared))
        else:
            handle = _share(resolved, shared, data_hash, owned)
            attempts = dict.fromkeys((t.key for t in pending), 0)
            queue = list(pending)
            while queue:
                futures = {resolved.submit(_execute, task, handle): task for task in queue}
                queue, broken = [], False
                for future in concurrent.futures.as_completed(futures):
                    task = futures[future]
                    try:
                        accept(task, future.result())
                        failed.pop(task.key, None)
                    except Exception as err:  # reported together below
                        failed[task.key] = err
                        attempts[task.key] += 1
                        broken |= _is_broken(err)
                        retry = attempts[task.key] <= retries and (owned or not _is_broken(err))
                        if retry:
                            queue.append(task)
                if broken and owned and queue:
                    # a worker died and took the pool with it: the finished results are kept,
                    # and the unfinished tasks (the dead worker's among them) go to a new pool
                    resolved.shutdown(wait=False, cancel_futures=True)
                    resolved, _ = resolve_executor(executor, len(queue), cores_per_task, fork_safe)
                    if resolved is None:
                        for task in queue:
                            accept(task, task.run(shared))
                            failed.pop(task.key, None)
                        queue = []
                        owned = False
                    else:
                        handle = _share(resolved, shared, data_hash, owned)
    finally:
        if owned:
            resolved.shutdown()
            _WORKER_DATA.pop(data_hash, None)
    if failed:
        raise BatchError(failed, [k for k in keys if k in results], folder)
    return {key: results[key] for key in keys}


def resolve_executor(
    executor: ExecutorArg, n_tasks: int, cores_per_task: int = 1, fork_safe: bool = True
) -> tuple[Executor | None, bool]:
    """Turn the ``executor=`` argument into ``(executor or None, created_here)``."""
    if executor is None or executor == "serial":
        return None, False
    if executor == "auto":
        workers = min(n_tasks, (os.cpu_count() or 1) // max(cores_per_task, 1))
        if n_tasks < 2 or workers < 2 or not fork_safe:
            return None, False
        # fork: workers inherit the data and do not re-run the caller's script
        methods = multiprocessing.get_all_start_methods()
        context = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
        return ProcessPoolExecutor(max_workers=workers, mp_context=context), True
    if not isinstance(executor, Executor) and not hasattr(executor, "submit"):
        raise TypeError(
            "executor must be 'auto', 'serial', None or a concurrent.futures.Executor "
            f"(for Dask: client.get_executor()), got {type(executor).__name__}"
        )
    return executor, False


def _share(executor: Executor, shared: Any, data_hash: str, owned: bool) -> Any:
    """Send the shared object once per worker where the executor allows it."""
    client = getattr(executor, "_client", None)  # distributed.cfexecutor.ClientExecutor
    if client is not None and hasattr(client, "scatter"):
        return client.scatter(shared, broadcast=True, hash=False)
    if owned and isinstance(executor, ProcessPoolExecutor) and _uses_fork(executor):
        _WORKER_DATA[data_hash] = shared  # inherited by the forked workers
        return _Shared(data_hash, None)
    return _Shared(data_hash, shared)


def _uses_fork(pool: ProcessPoolExecutor) -> bool:
    context = getattr(pool, "_mp_context", None)
    return context is not None and context.get_start_method() == "fork"


def _is_broken(err: BaseException) -> bool:
    return isinstance(err, concurrent.futures.process.BrokenProcessPool)


def result_path(folder: Path, key: str) -> Path:
    """Where the result of task ``key`` is stored."""
    return folder / f"{key}.nc"


def _store(folder: Path, task: BatchTask, tree: xr.DataTree, data_hash: str) -> None:
    tree = with_checksum(tree, {_TASK_ATTR: task.fingerprint, _DATA_ATTR: data_hash})
    path = result_path(folder, task.key)
    partial = path.with_suffix(".partial")
    tree.to_netcdf(partial, engine="h5netcdf")
    partial.replace(path)  # only complete files carry the final name


def _load(folder: Path, task: BatchTask, data_hash: str) -> xr.DataTree | None:
    """A stored result that is intact and was made by this very task on this data, else ``None``.

    A file that cannot be read or whose checksum fails is reported (a warning naming it)
    and recomputed; a file made with other settings or data is recomputed silently, as a
    stale cache entry.
    """
    path = result_path(folder, task.key)
    if not path.exists():
        return None
    try:
        with xr.open_datatree(path, engine="h5netcdf") as handle:
            tree = handle.load()
    except (OSError, ValueError) as exc:
        warnings.warn(f"{path} is unreadable ({type(exc).__name__}); recomputing it", stacklevel=3)
        return None
    problem = checksum_problem(tree)
    if problem is not None:
        warnings.warn(f"{path} is not used: {problem}; recomputing it", stacklevel=3)
        return None
    if tree.attrs.get(_TASK_ATTR) != task.fingerprint or tree.attrs.get(_DATA_ATTR) != data_hash:
        return None
    tree.attrs = {k: v for k, v in tree.attrs.items() if k not in (_TASK_ATTR, _DATA_ATTR, CHECKSUM_ATTR)}
    return tree


class DaskExecutor:
    """Context manager yielding a Dask ``Client.get_executor()``.

    ``DaskExecutor(workers=2)`` starts a local cluster of worker processes
    (one thread each); ``DaskExecutor(scheduler="tcp://host:8786")`` connects to
    a running scheduler. Requires the ``dask`` extra.
    """

    def __init__(self, *, workers: int | None = None, scheduler: str | None = None) -> None:
        if (workers is None) == (scheduler is None):
            raise ValueError("give exactly one of workers= (local cluster) or scheduler= (address)")
        self.workers = workers
        self.scheduler = scheduler
        self.client: Any = None
        self.cluster: Any = None

    def __enter__(self) -> Executor:
        try:
            from distributed import Client, LocalCluster
        except ImportError:
            from benchmirt_bayes.errors import MissingExtraError

            raise MissingExtraError("distributed", "dask", "running fits on a Dask cluster") from None
        if self.scheduler is not None:
            self.client = Client(self.scheduler)
        else:
            self.cluster = LocalCluster(
                n_workers=self.workers, threads_per_worker=1, processes=True, dashboard_address=None
            )
            self.client = Client(self.cluster)
        return self.client.get_executor()

    def __exit__(self, *exc: object) -> None:
        self.client.close()
        if self.cluster is not None:
            self.cluster.close()
