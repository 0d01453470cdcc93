"""A job's own files, as ``spark-submit --files / --py-files`` ship them, and what its driver died of.

A job is usually a folder: the script, helper modules it imports by bare name, and data files it opens
by a relative path (a static CSV it joins with), written to be run as ``cd job && spark-submit job.py``.
The plugin runs the driver in a fresh working directory of its own (docs/job-contract.md), so:

* the script's folder is on the driver's and the executors' ``PYTHONPATH`` (``stack.driver.command``),
  as ``spark-submit`` puts the primary script's folder on the driver's ``sys.path``;
* ``files=`` are copied into the driver's working directory (a relative ``open("rates.csv")`` finds
  them) and passed as ``--files`` (executors get them in theirs; ``SparkFiles.get`` works);
* ``py_files=`` are passed as ``--py-files`` (a folder -- a package -- is zipped first): on the driver's
  ``sys.path`` and shipped to the executors (``spark.submit.pyFiles``).

This module finds the files a job names (:func:`resolve`); the stack's launcher copies and zips them into
the driver's working directory (``stack.driver.command``). A driver that dies early (a file it opens is
missing) is reported by its own last exception line (``JobHandle.last_error``), with
:func:`missing_file_hint` naming the fix.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

from pytest_streamchaos.stack.driver.command import RESERVED

PY_SUFFIXES = (".py", ".zip", ".egg")


def resolve(kind: str, paths: Iterable[str | os.PathLike] | None, bases: Sequence[Path]) -> list[Path]:
    """Each of ``paths`` (``kind``: ``files`` or ``py_files``, for messages) as an existing absolute path:
    absolute as given, else the first of ``bases`` it is found under. Raises :class:`ValueError`
    naming the file and every place looked at, or two files that would land under one name."""
    out: list[Path] = []
    for p in paths or []:
        given = Path(p)
        candidates = [given] if given.is_absolute() else [b / given for b in bases]
        found = next((c for c in candidates if c.exists()), None)
        if found is None:
            raise ValueError(f"{kind}: {str(p)!r} not found; looked at {', '.join(map(str, candidates))}. "
                             "Give it absolute or relative to the job's folder")
        if kind == "py_files" and found.is_file() and found.suffix not in PY_SUFFIXES:
            raise ValueError(f"py_files: {found} is not a .py, .zip or .egg file (or a package folder); "
                             "data files go in files=")
        out.append(found.resolve())
    names = [p.name for p in out]
    for name in names:
        if names.count(name) > 1 or (kind == "files" and name in RESERVED):
            raise ValueError(f"{kind}: two files would be named {name!r} in the driver's working directory"
                             if names.count(name) > 1 else
                             f"files: {name!r} is a name the plugin uses in the driver's working directory "
                             f"({', '.join(RESERVED)}); rename the file")
    return out


_MISSING = (re.compile(r"No such file or directory: '([^']+)'"),
            re.compile(r"Path does not exist: (?:file:)?(\S+?)\.?$"))


def missing_file_hint(exception_line: str, script_dir: Path, workdir: Path) -> str:
    """For an exception saying a file is missing, how to give the job that file (``""`` otherwise): a
    relative path is opened in the driver's working directory, which is not the job's folder."""
    name = next((m.group(1) for rx in _MISSING if (m := rx.search(exception_line))), None)
    if name is None:
        return ""
    path = Path(name)
    if path.is_absolute():
        try:
            path = path.relative_to(workdir)
        except ValueError:
            return f" ({name} is an absolute path the job names: it must exist on this machine)"
    if (script_dir / path).exists():
        return (f" ({path} is in the job's folder, but the driver runs in {workdir}: "
                f"pass chaos.run(..., setup=JobSetup(files=[{str(path)!r}])))")
    return (f" (a relative path is opened in the driver's working directory {workdir}, not the job's folder: "
            f"pass the file with chaos.run(..., setup=JobSetup(files=[...])))")
