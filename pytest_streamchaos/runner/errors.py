"""The error of a run that could not produce a verdict, and how it names the job's own failure."""

from __future__ import annotations

from pathlib import Path

from pytest_streamchaos.spark import job_files
from pytest_streamchaos.stack.base import JobHandle


class RunError(RuntimeError):
    """The run could not produce a verdict (the job never produced output, the stack broke, ...).
    The message says what was awaited and shows the job's log tail."""


def job_failed(job: JobHandle, what: str, script: Path) -> RunError:
    """The run's error: ``what`` and, when the driver has died, the exception it died of with how to
    fix a missing file (:func:`~pytest_streamchaos.spark.job_files.missing_file_hint`) on the same
    first line; the driver log's tail below."""
    cause = None if job.alive else job.last_error()
    if cause:
        what = f"{what}: {cause}{job_files.missing_file_hint(cause, script.parent, job.workdir)}"
    return RunError(f"{what}\n--- job log ({job.name}) tail ---\n{job.tail_log(40)}")
