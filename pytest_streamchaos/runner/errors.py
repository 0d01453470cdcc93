"""The error of a run that could not produce a verdict, and how it names the job's own failure."""

from __future__ import annotations

import re
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
        what = f"{what}: {cause}{job_files.missing_file_hint(cause, script.parent, job.workdir)}{module_hint(cause)}"
    return RunError(f"{what}\n--- job log ({job.name}: {job.log_path}) tail ---\n{job.tail_log(40)}")


#: a Python module the job's Python could not import: ``No module named 'x.y'`` or ``cannot import name 'z'
#: from 'x.y'``
_MISSING_MODULE = re.compile(r"(?:No module named '([\w.]+)'|cannot import name '\w+' from '([\w.]+)')")
#: the package that provides a module, where its name is not the module's
_PACKAGES = {"google.protobuf": "protobuf", "google": "protobuf"}


def module_hint(cause: str) -> str:
    """``; fix: ...`` for an error of a module the job's Python could not import ("" for any other
    error): PySpark's stateful Python APIs import google.protobuf, which pyspark does not install."""
    m = _MISSING_MODULE.search(cause)
    if m is None:
        return ""
    module = m.group(1) or m.group(2)
    package = _PACKAGES.get(module, module.split(".")[0])
    if package == "protobuf":
        return ("; fix: install protobuf where the job's Python runs: PySpark's stateful Python APIs "
                "(transformWithStateInPandas) import it and pyspark does not install it; the plugin's set-up does "
                "(./dev, or pip install pytest-streamchaos)")
    return (f"; fix: install {package} where the job's Python runs (pip install {package}), or ship the module "
            "with the job (chaos.run(..., setup=JobSetup(py_files=[...])))")
