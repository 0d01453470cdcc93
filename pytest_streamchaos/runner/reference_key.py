"""The reference run's key: everything that decides what a job writes on its reference input, hashed, so
that a reference kept from another session is reused only when nothing of it changed
(:mod:`.reference_cache`).

The key is made of **parts**, each a mapping of item -> a short digest (a version where it is one), so
that a key that changed can be told in words (:func:`changes`: ``its module helpers.py``, ``conf
spark.sql.shuffle.partitions``, ``pyspark 4.2.0 -> 4.2.1``) without keeping any value (a conf or an
environment variable can be a secret):

- ``job``, ``modules``: the job's script and the modules beside it that it imports, by their content
  (:func:`~pytest_streamchaos.spark.job_code.job_sources`); ``files``, ``py_files``: what it is given;
- ``packages``: the installed packages it imports, by version (pyspark, delta-spark, pandas, ...), and
  the project's modules it imports from elsewhere, by content;
- ``args``, ``conf``, ``env``, ``setup`` (trigger, checkpoint storage, ``kafka_port``, deploy mode);
- ``inputs`` (each input's record factory, by :func:`~pytest_streamchaos.usercode.fingerprint`),
  ``outputs``, ``load`` (seed, rate, duration, the workload's shape);
- ``spark`` (the cluster manager's class, Python's version, the Delta Lake jar of a job that uses Delta),
  ``stack`` (the session's workers, cores, brokers, backend, time zone: what the session gives every job),
  ``plugin`` (its version and the code that makes records and reads rows: a change there changes the input
  or what is read of the output).

**Cannot be computed.** A job that reads a file it was not told about (a data file beside it, named in its
code, not given as ``files=``), imports a module found nowhere here, or has a record factory whose source
cannot be read: what its output depends on is not all in the key. The key is still made (the session
reuses it between its own tests, as always) but :attr:`RefKey.why_not` says why it is not kept across
sessions, in one line naming the fix.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import sys
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_streamchaos.deprecation import installed_version
from pytest_streamchaos.spark import delta, job_code
from pytest_streamchaos.usercode import fingerprint

if TYPE_CHECKING:
    from pytest_streamchaos.runner.spec import RunInputs, RunSpec

#: the parts of a key: part -> item -> digest (or version)
Parts = dict[str, dict[str, str]]
#: the plugin's code whose change changes a run's input or what is read of its output (the reference runs' plan
#: is ``runner/reference.py``'s)
_PLUGIN_CODE = ("workload", "observe", "job", "runner/reference.py")


@dataclass(frozen=True)
class RefKey:
    """A reference's key (:attr:`key`), what it is made of (:attr:`parts`) and, when it does not hold all
    that decides the job's output, why (:attr:`why_not`, one line: the reference is then not kept across
    sessions)."""

    key: str
    parts: Parts
    why_not: str | None = None

    @property
    def short(self) -> str:
        return self.key[:12]


def digest(value: object) -> str:
    """A short digest of a JSON-able value."""
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()[:12]


def reference_key(spec: RunSpec, inputs: RunInputs, seed: int, stack: Mapping[str, Any] | None = None) -> RefKey:
    """The key of ``spec``'s reference (see the module docstring); ``stack``: the session's and the cluster's
    part (:func:`stack_part`)."""
    why: list[str] = []
    script = Path(spec.job)
    py_files = [Path(p) for p in spec.py_files]
    sources = job_code.job_sources(script, py_files) if script.is_file() else []
    parts: Parts = {
        "job": {script.name: _path_digest(script) if script.is_file() else "missing"},
        "modules": {_rel(p, script.parent): _path_digest(p) for p in sources if p != script},
        "packages": _packages(sources, why),
        "files": {Path(p).name: _path_digest(Path(p)) for p in spec.files},
        "py_files": {p.name: _path_digest(p) for p in py_files},
        "args": {"": digest(spec.args)},
        "conf": {k: digest(v) for k, v in spec.conf.items()},
        "env": {k: digest(v) for k, v in spec.env.items()},
        "setup": {k: digest(v) for k, v in (("trigger", spec.trigger_seconds), ("checkpoint", spec.checkpoint),
                                            ("kafka_port", spec.kafka_port), ("deploy_mode", spec.deploy_mode))},
        "inputs": _factories(spec, inputs, why),
        "outputs": {str(o): "" for o in spec.outputs or []},
        "load": {k: digest(v) for k, v in (("seed", seed), ("rate", spec.rate), ("duration", spec.duration),
                                           ("partitions", spec.partitions), ("key_space", spec.key_space),
                                           ("skew", spec.skew), ("record_size", spec.record_size),
                                           ("late_fraction", spec.late_fraction))},
        "spark": {"python": "{}.{}".format(*sys.version_info[:2]), **_delta(sources, spec, why)},
        "stack": {k: str(v) for k, v in (stack or {}).items()},
        "plugin": plugin_part(),
    }
    _unnamed_files(sources, spec, why)
    key = hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:24]
    return RefKey(key, parts, why[0] if why else None)


#: what of the session's settings every job gets (``--chaos-workers`` ...), in the ``stack`` part
SESSION_SETTINGS = ("backend", "workers", "worker_cores", "worker_memory", "kafka_brokers")


def stack_part(cluster: str, settings: Mapping[str, Any]) -> dict[str, str]:
    """What the session gives every job, as the ``stack`` part: the cluster manager's class (``cluster``),
    the session's :data:`SESSION_SETTINGS` (of the plugin's settings, as a mapping) and the time zone (a
    timestamp cast to a string is written in it)."""
    out = {"cluster": cluster, "timezone": os.environ.get("TZ") or "/".join(time.tzname)}
    out.update({k: str(settings[k]) for k in SESSION_SETTINGS if k in settings})
    return out


@functools.lru_cache(maxsize=1)
def plugin_part() -> dict[str, str]:
    """The plugin's version and the digest of its code that makes the records and reads the rows."""
    root = Path(__file__).resolve().parent.parent
    return {"version": installed_version(), **{d: _path_digest(root / d) for d in _PLUGIN_CODE}}


def _rel(path: Path, base: Path) -> str:
    try:
        return str(path.resolve().relative_to(base.resolve()))
    except ValueError:
        return path.name


@functools.lru_cache(maxsize=1024)
def _file_digest(path: str, size: int, mtime_ns: int) -> str:
    """One file's content digest, memoised by its size and time (a large data file is read once a session)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()[:16]


def _path_digest(path: Path) -> str:
    """A file's content digest, or a folder's (its files' paths and contents, caches left out)."""
    try:
        if path.is_dir():
            files = sorted(p for p in path.rglob("*") if p.is_file() and "__pycache__" not in p.parts
                           and p.suffix != ".pyc")
            return digest([[str(p.relative_to(path)), _path_digest(p)] for p in files])
        st = path.stat()
        return _file_digest(str(path), st.st_size, st.st_mtime_ns)
    except OSError:
        return "unreadable"


def _factories(spec: RunSpec, inputs: RunInputs, why: list[str]) -> dict[str, str]:
    """Each input's record factory by its fingerprint (``built-in``: the plugin's own records)."""
    out = {}
    for topic in spec.inputs or [""]:
        fn = inputs.factories.get(topic)
        if fn is None:
            out[topic] = "built-in"
            continue
        try:
            out[topic] = fingerprint(fn)
        except ValueError as exc:
            out[topic] = "unknown"
            why.append(f"the record factory of input {topic!r}: {exc}")
    return out


@functools.lru_cache(maxsize=1)
def _distributions() -> Mapping[str, list[str]]:
    return importlib.metadata.packages_distributions()


def _packages(sources: Iterable[Path], why: list[str]) -> dict[str, str]:
    """The modules the job's code imports from outside it: an installed package by its distributions'
    versions, a module of the project found elsewhere on ``sys.path`` by its content; the standard library
    is left out. A module found nowhere is named in ``why`` (unless its import is optional)."""
    out: dict[str, str] = {}
    for imp in job_code.outside_imports(sources):
        if imp.name in sys.stdlib_module_names or imp.name in sys.builtin_module_names:
            continue
        try:
            found = importlib.util.find_spec(imp.name)
        except (ImportError, ValueError):
            found = None
        if found is None:
            out[imp.name] = "absent"
            if not imp.optional:
                why.append(f"the job imports {imp.name} ({imp.where}), found neither beside it nor installed here: "
                           "what it runs cannot be told; give it as py_files=[...] or install it")
            continue
        dists = sorted(set(_distributions().get(imp.name, [])))
        if dists:
            out[imp.name] = ",".join(f"{d}=={_version(d)}" for d in dists)
        elif found.submodule_search_locations:
            out[imp.name] = digest([_path_digest(Path(p)) for p in found.submodule_search_locations])
        else:
            out[imp.name] = _path_digest(Path(found.origin)) if found.origin and Path(found.origin).is_file() \
                else "present"
    return out


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "?"


def _delta(sources: list[Path], spec: RunSpec, why: list[str]) -> dict[str, str]:
    """The Delta Lake jar of a job that uses Delta (:mod:`~pytest_streamchaos.spark.delta`); nothing else."""
    if delta.needs_delta(sources, spec.conf, [str(o) for o in spec.outputs or []]) is None:
        return {}
    from pytest_streamchaos.stack.driver.conf import spark_home

    try:
        return {"delta": delta.choice(spark_home()).coordinate}
    except Exception as exc:  # noqa: BLE001  (the launch names it properly; here it only makes the key unknown)
        why.append(f"which Delta Lake jar the job runs on is not known here ({exc})")
        return {"delta": "unknown"}


def _unnamed_files(sources: list[Path], spec: RunSpec, why: list[str]) -> None:
    """A file the job's code names that it was not given (``files=``): its content is not in the key."""
    given = [Path(p).resolve() for p in [*spec.files, *spec.py_files]]
    names = {p.name for p in given}
    for where, path in job_code.named_paths(sources):
        if path in given or path.name in names or any(path.is_relative_to(g) for g in given if g.is_dir()):
            continue
        folder = Path(spec.job).resolve().parent
        shown = str(path.relative_to(folder)) if path.is_relative_to(folder) else str(path)
        why.append(f"the job's code names {shown} ({where}), which it was not given as files=: its content is not "
                   f"in the reference's key; pass setup=JobSetup(files=[{shown!r}]) to keep the reference")
        return


#: how :func:`changes` names an item of each part
_WORDS = {"job": "the job {item}", "modules": "its module {item}", "packages": "the installed {item}",
          "files": "its file {item}", "py_files": "its py_file {item}", "args": "its arguments",
          "conf": "conf {item}", "env": "env {item}", "setup": "{item}", "inputs": "the record factory of {item}",
          "outputs": "output {item}", "load": "{item}", "spark": "{item}", "stack": "the session's {item}",
          "plugin": "the plugin's {item}"}
#: parts whose values are versions, shown as ``old -> new``
_VERSIONS = ("packages", "spark", "stack")


def changes(old: Mapping[str, Mapping[str, str]], new: Mapping[str, Mapping[str, str]]) -> list[str]:
    """What differs between two keys' parts, in words (``its module helpers.py``, ``rate``,
    ``the installed pyspark: pyspark==4.2.0 -> pyspark==4.2.1``)."""
    out = []
    for part, words in _WORDS.items():
        a, b = old.get(part, {}), new.get(part, {})
        for item in sorted(set(a) | set(b)):
            if a.get(item) == b.get(item):
                continue
            said = words.format(item=item or part).rstrip()
            if part in _VERSIONS:
                said += f": {a.get(item, 'none')} -> {b.get(item, 'none')}"
            elif item not in a or item not in b:
                said += " (new)" if item not in a else " (gone)"
            out.append(said)
    return out
