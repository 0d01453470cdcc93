"""The deprecation policy's one helper (docs/deprecations.md).

A public name, argument, option or attribute that is renamed or moved keeps working for one minor
version: each use warns with :class:`StreamChaosDeprecationWarning`, naming the new form and the
version that removes the old one. From that version on the old form fails with one line naming the
version that removed it and the new form. Every such form is one :class:`Moved` entry in :data:`MOVED`,
and the code that still accepts it calls :func:`use` -- which warns or refuses by the installed version,
so a release that reaches ``removed_in`` turns the warning into the refusal by itself.
``tests/unit/test_release.py`` holds the rest of the policy: the window is one minor version, and
every entry has its changelog lines (deprecated under ``since``, removed under ``removed_in``).

This module imports nothing of the package, so that any layer may use it (the job side too: a Spark
driver must not load pytest); the package's ``__version__`` is read here.
"""

from __future__ import annotations

import functools
import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata

#: the distribution's name, as the messages say it
DIST = "pytest-streamchaos"


class StreamChaosDeprecationWarning(DeprecationWarning):
    """A form of pytest-streamchaos's public API that is deprecated: the message names the new form and
    the version that removes the old one. pytest shows it in its warnings summary; ``-W
    error::DeprecationWarning`` (or this class) makes it fail a test."""


@dataclass(frozen=True)
class Moved:
    """A renamed or moved public form: ``old`` as a test wrote it, ``new`` as it is written now;
    deprecated in ``since`` (None: removed before this policy, without a window) and removed in
    ``removed_in`` (the minor version after ``since``)."""

    old: str
    new: str
    since: str | None
    removed_in: str

    def warning(self) -> str:
        return f"{self.old} is deprecated since {DIST} {self.since} and goes in {self.removed_in}: use {self.new}"

    def refusal(self) -> str:
        return f"{self.old} was removed in {DIST} {self.removed_in}: use {self.new}"

    def removed(self, version: str) -> bool:
        """Whether ``version`` (the installed one) no longer accepts the old form."""
        return release(version) >= release(self.removed_in)


#: every renamed or moved public form, by its old form (CHANGELOG.md names each, as written here)
MOVED: dict[str, Moved] = {m.old: m for m in (
    # before the policy: removed without a window, refused with the line (CHANGELOG 0.2.0, "Removed")
    Moved("chaos.run(<argument of a group>=...)", "chaos.run(..., load=Load(...), watch=Watch(...), "
          "setup=JobSetup(...), timing=Timing(...)) (from pytest_streamchaos import Load, Watch, JobSetup, Timing)",
          None, "0.2.0"),
    Moved("chaos.run(kafka_timeout_ms=...)", "the job's own Kafka timeout: its kafkaConsumer.pollTimeoutMs option, "
          "or setup=JobSetup(conf={'spark.network.timeout': ...}), which it follows", None, "0.2.0"),
    Moved("run.observer_lines()", "run.describe() (its observer lines) or run.observer (the numbers)", None, "0.2.0"),
    # deprecated in 0.2.0, removed in 0.3.0
    Moved("run.faults[i].detection", "run.faults[i].output_symptom", "0.2.0", "0.3.0"),
    Moved("run.faults[i].aim[key]", "run.faults[i].aim.<key> (an Aim: moment, batch, phase, hit, attempts)",
          "0.2.0", "0.3.0"),
    Moved("run.exactly_once_verified", "run.exactly_once_check['status'] != 'unverified'", "0.2.0", "0.3.0"),
    Moved("from pytest_streamchaos.spark import <job helper>", "from pytest_streamchaos.job import <job helper> "
          "(job_config, read_kafka, write_kafka_batch, ExactlyOnceKafkaSink, ...)", "0.2.0", "0.3.0"),
    Moved("--chaos-brokers / ini streamchaos_brokers", "--chaos-kafka-brokers / ini streamchaos_kafka_brokers",
          "0.2.0", "0.3.0"),
    # deprecated in 0.2.1, removed in 0.3.0
    Moved("RepeatedRun.<an attribute of one run>", "runs.worst_run.<attribute> (or runs.runs[k].<attribute>); a "
          "repeated run's own members are its medians, timeline, faults, windows, fault_errors, meta and the "
          "harness's facts", "0.2.1", "0.3.0"),
)}


def release(version: str) -> tuple[int, ...]:
    """``"0.3.0.dev1"`` -> ``(0, 3, 0)``: the numbers a window is counted in (a pre-release of the removing
    version removes too)."""
    found = re.match(r"\d+(\.\d+)*", version)
    nums = tuple(int(x) for x in found.group().split(".")) if found else ()
    return (nums + (0, 0, 0))[:3]


@functools.cache
def installed_version() -> str:
    """The installed distribution's version (pyproject.toml's, as the install wrote it; ``pytest_streamchaos.
    __version__``); ``0+unknown`` for a source tree on sys.path that was never installed."""
    try:
        return metadata.version(DIST)
    except metadata.PackageNotFoundError:
        return "0+unknown"


def use(old: str, *, stacklevel: int = 2, error: type[Exception] = TypeError,
        warn: Callable[..., None] = warnings.warn) -> None:
    """A use of the old form ``old`` (a key of :data:`MOVED`): a :class:`StreamChaosDeprecationWarning`
    while its window lasts, given to ``warn`` (``warnings.warn``, pointing ``stacklevel`` frames above the
    caller; pytest's ``config.issue_config_time_warning`` for an option), ``error`` with the one-line
    refusal once the installed version is its ``removed_in``."""
    moved = MOVED[old]
    if moved.since is None or moved.removed(installed_version()):
        raise error(moved.refusal())
    warn(StreamChaosDeprecationWarning(moved.warning()), stacklevel=stacklevel + 1)
