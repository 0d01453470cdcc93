"""What a run's job left on this host outside the run's own directory, or on the session's object store, for a
next run of the same job to trip on: its checkpoint (a job that hard-codes an absolute path or an ``s3a://``
URL would resume from it) and the outputs the test declared with an absolute path or such a URL (a file sink's
``_spark_metadata`` would make a next query skip its first batches as already written; a Delta table would hold
both runs' rows).

A test's own first run meets a clean place (the test clears it); the harness's further runs of the same
job -- ``@explore``'s schedules, the reference run's pair -- clear what the one before left
(:func:`clear_leftovers`).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterable
from pathlib import Path

from pytest_streamchaos import storages
from pytest_streamchaos.history import History
from pytest_streamchaos.observe.output_names import output_path
from pytest_streamchaos.observe.storage import Place


def leftovers(checkpoint: str | None, storage: str, outputs: Iterable[str]) -> list[str]:
    """The absolute local paths a run's job wrote that outlive it -- its ``checkpoint`` when ``storage`` (a name of
    :data:`pytest_streamchaos.storages.STORAGES`) is on this host, and the ``file:`` / ``delta:`` ``outputs``
    named with an absolute path -- and the URLs on a store of buckets the session keeps (its checkpoint or
    outputs at ``s3a://...``)."""
    out = []
    if checkpoint and _kept(checkpoint):
        out.append(checkpoint)
    elif checkpoint and storages.get(storage).on_host:
        path = checkpoint.removeprefix("file://").removeprefix("file:")
        if path.startswith("/"):
            out.append(path)
    for name in outputs:
        path = (output_path(name) or "").removeprefix("//")
        if path.startswith("/") or _kept(path):
            out.append(path)
    return out


def _kept(url: str) -> bool:
    """Whether ``url`` is on a storage of buckets (the session's object store keeps what a run wrote there)."""
    entry = storages.of_scheme(url.split("://", 1)[0]) if "://" in url else None
    return entry is not None and entry.buckets


def run_leftovers(history: History) -> list[str]:
    """:func:`leftovers` of one run, from its history's facts and topics."""
    ran = history.facts.job  # the job's facts, not its handle
    topics = history.topics
    outputs = (topics.outputs or []) if topics is not None else []
    if ran is None:
        return leftovers(None, storages.DEFAULT, outputs)
    return leftovers(ran.checkpoint, ran.checkpoint_storage, outputs)


def clear_leftovers(runs: Iterable[History], own: Path, place: Callable[[str], Place] | None = None) -> None:
    """Remove what the runs of these histories left on this host outside ``own`` (the harness's directory), and
    (``place``: the :class:`~pytest_streamchaos.observe.storage.Place` of a URL) on the session's object store."""
    own = own.resolve()
    for run in runs:
        for path in run_leftovers(run):
            if "://" in path:
                if place is not None:
                    _remove(place(path))
                continue
            p = Path(path).resolve()
            if p != own and own not in p.parents and p.exists():
                shutil.rmtree(p, ignore_errors=True)


def _remove(where: Place) -> None:
    """Every object under a place of the object store (nothing there: nothing to do)."""
    try:
        if where.fs.exists(where.path):
            where.fs.rm(where.path, recursive=True)
    except FileNotFoundError:
        pass
