"""What a run's job left on this host outside the run's own directory, for a next run of the same job to
trip on: its checkpoint (a job that hard-codes an absolute path would resume from it) and the outputs the
test declared with an absolute path (a file sink's ``_spark_metadata`` would make a next query skip its
first batches as already written; a Delta table would hold both runs' rows).

A test's own first run meets a clean place (the test clears it); the harness's further runs of the same
job -- ``@explore``'s schedules, the reference run's pair -- clear what the one before left
(:func:`clear_leftovers`).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import Any

#: the output prefixes that name a directory on this host
LOCAL_OUTPUTS = ("file:", "delta:")


def leftovers(checkpoint: str | None, storage: str, outputs: Iterable[str]) -> list[str]:
    """The absolute local paths a run's job wrote that outlive it: its ``checkpoint`` when ``storage`` is
    local, and the ``file:`` / ``delta:`` ``outputs`` named with an absolute path."""
    out = []
    if storage == "local" and checkpoint:
        path = checkpoint.removeprefix("file://").removeprefix("file:")
        if path.startswith("/"):
            out.append(path)
    for name in outputs:
        prefix = next((p for p in LOCAL_OUTPUTS if name.startswith(p)), None)
        path = name[len(prefix):].removeprefix("//") if prefix else ""
        if path.startswith("/"):
            out.append(path)
    return out


def run_leftovers(run: Any) -> list[str]:
    """:func:`leftovers` of one ``ChaosRun``, from its facts and topics."""
    job = run.facts.job
    topics = run.history.topics
    return leftovers(None if job is None else job.checkpoint, "local" if job is None else job.checkpoint_storage,
                     (topics.outputs or []) if topics is not None else [])


def clear_leftovers(runs: Iterable[Any], own: Path) -> None:
    """Remove what ``runs`` left on this host outside ``own`` (the harness's directory)."""
    own = own.resolve()
    for run in runs:
        for path in run_leftovers(run):
            p = Path(path).resolve()
            if p != own and own not in p.parents and p.exists():
                shutil.rmtree(p, ignore_errors=True)
