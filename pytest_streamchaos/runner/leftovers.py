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

from pytest_streamchaos import storages
from pytest_streamchaos.observe.output_names import output_path


def leftovers(checkpoint: str | None, storage: str, outputs: Iterable[str]) -> list[str]:
    """The absolute local paths a run's job wrote that outlive it: its ``checkpoint`` when ``storage`` (a name of
    :data:`pytest_streamchaos.storages.STORAGES`) is on this host, and the ``file:`` / ``delta:`` ``outputs``
    named with an absolute path."""
    out = []
    if checkpoint and storages.get(storage).on_host:
        path = checkpoint.removeprefix("file://").removeprefix("file:")
        if path.startswith("/"):
            out.append(path)
    for name in outputs:
        path = (output_path(name) or "").removeprefix("//")
        if path.startswith("/"):
            out.append(path)
    return out


def run_leftovers(run: Any) -> list[str]:
    """:func:`leftovers` of one ``ChaosRun``, from its facts and topics."""
    ran = run.facts.job  # the job's facts, not its handle
    topics = run.history.topics
    outputs = (topics.outputs or []) if topics is not None else []
    if ran is None:
        return leftovers(None, storages.DEFAULT, outputs)
    return leftovers(ran.checkpoint, ran.checkpoint_storage, outputs)


def clear_leftovers(runs: Iterable[Any], own: Path) -> None:
    """Remove what ``runs`` left on this host outside ``own`` (the harness's directory)."""
    own = own.resolve()
    for run in runs:
        for path in run_leftovers(run):
            p = Path(path).resolve()
            if p != own and own not in p.parents and p.exists():
                shutil.rmtree(p, ignore_errors=True)
