"""The search's memory across sessions, like Hypothesis' example database: per explored test, the
schedules that failed or were flaky (run first next time) and the schedules already given a verdict
(the next session goes on from there instead of repeating the same first ones).

Kept in pytest's own cache by default (``config.cache.mkdir("streamchaos-explore")``: ``--cache-clear``
forgets it, ``-p no:cacheprovider`` turns it off), or in a directory ``--chaos-explore-db=DIR`` names, or
nowhere (``--chaos-explore-db=off``). One JSON file per test, named by a hash of its node id::

    {"nodeid": "tests/test_jobs.py::test_lake", "plugin": "0.2.0",
     "found": [[["kill_driver", "driver", "tasks_running", 0]]], "flaky": [], "tried": [...]}

An entry written by another plugin version is set aside (its phases may mean something else there) and
said so; one that cannot be read is refused before anything starts, naming the file and the fix.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from pytest_streamchaos.search.engine import Recall, Report
from pytest_streamchaos.search.schedule import Schedule, Step

#: the pytest cache directory the memory lives in by default
CACHE_DIR = "streamchaos-explore"


class MemoryError_(ValueError):  # noqa: N801  (not the builtin MemoryError)
    """An entry of the memory cannot be read; the message names the file and the fix."""


@dataclass
class Entry:
    """What the memory holds of one test."""

    nodeid: str
    plugin: str
    found: list[Schedule] = field(default_factory=list)
    flaky: list[Schedule] = field(default_factory=list)
    tried: list[Schedule] = field(default_factory=list)

    def recall(self, faults: tuple[str, ...]) -> Recall:
        """What the next search takes from this entry, kept to schedules of ``faults`` (the test's faults
        may have changed since)."""
        def mine(s: Schedule) -> bool:
            return all(step.kind in faults for step in s.steps)

        first = tuple(dict.fromkeys(s for s in [*self.found, *self.flaky] if mine(s)))
        return Recall(first, frozenset(s for s in self.tried if mine(s)))

    def to_dict(self) -> dict[str, object]:
        return {"nodeid": self.nodeid, "plugin": self.plugin, "found": [_steps(s) for s in self.found],
                "flaky": [_steps(s) for s in self.flaky], "tried": [_steps(s) for s in self.tried]}


class Memory:
    """The memory in ``directory`` (None: off); ``where`` names it in messages; ``version`` the plugin's."""

    def __init__(self, directory: Path | Callable[[], Path] | None, where: str, version: str) -> None:
        self._directory = directory  # a callable: made on first use (a session that explores nothing makes none)
        self.where = where
        self.version = version

    @property
    def directory(self) -> Path | None:
        if callable(self._directory):
            self._directory = self._directory()
        return self._directory

    @classmethod
    def for_config(cls, config: pytest.Config, db: str, version: str) -> Memory:
        """The memory ``--chaos-explore-db`` (``db``) chooses: pytest's cache (""), a directory, or ``off``."""
        if db == "off":
            return cls(None, "off (--chaos-explore-db=off)", version)
        if db:
            return cls(Path(db).expanduser(), f"--chaos-explore-db={db}", version)
        cache = getattr(config, "cache", None)
        if cache is None:
            return cls(None, "off (pytest's cache provider is disabled)", version)
        return cls(lambda: Path(cache.mkdir(CACHE_DIR)), "pytest's cache (--cache-clear forgets it)", version)

    @property
    def on(self) -> bool:
        return self._directory is not None

    def path(self, nodeid: str) -> Path | None:
        if self.directory is None:
            return None
        return self.directory / f"{hashlib.sha256(nodeid.encode()).hexdigest()[:20]}.json"

    def load(self, nodeid: str) -> Entry | None:
        """This test's entry (None: none, memory off, or written by another plugin version);
        :class:`MemoryError_` when it cannot be read."""
        path = self.path(nodeid)
        if path is None or not path.exists():
            return None
        fix = "delete it, run pytest --cache-clear, or pass --chaos-explore-db=off"
        try:
            doc = json.loads(path.read_text())
            entry = Entry(str(doc["nodeid"]), str(doc["plugin"]), *(list(map(_schedule, doc[k]))
                                                                    for k in ("found", "flaky", "tried")))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise MemoryError_(f"{nodeid}: @explore's memory {path} cannot be read ({type(exc).__name__}: {exc}); "
                               f"{fix}") from None
        if entry.nodeid != nodeid:
            raise MemoryError_(f"{nodeid}: @explore's memory {path} belongs to {entry.nodeid}; {fix}")
        return entry if entry.plugin == self.version else None

    def save(self, nodeid: str, before: Entry | None, report: Report) -> None:
        """Remember what ``report``'s search left: its failing and flaky schedules first next time (a
        remembered one that passed now is forgotten), and the schedules given a verdict so far (the ones of
        this session alone when the order started over)."""
        path = self.path(nodeid)
        if path is None:
            return
        passed_now = {r.schedule for r in report.runs if r.schedule is not None and r.outcome.error is None
                      and r.outcome.all_hit(r.schedule) and not r.outcome.falsified}
        old = before or Entry(nodeid, self.version)
        found = [] if report.found is None else [report.found.schedule, report.found.original]
        found += [s for s in old.found if s not in passed_now]
        flaky = [f.schedule for f in report.flaky] + [s for s in old.flaky if s not in passed_now]
        tried = passed_now if report.cycled else set(old.tried) | passed_now
        found = list(dict.fromkeys(found))
        entry = Entry(nodeid, self.version, found, [s for s in dict.fromkeys(flaky) if s not in found],
                      sorted(tried, key=repr))
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(entry.to_dict(), indent=1))
        tmp.replace(path)  # a reader never sees half a file


def _steps(schedule: Schedule) -> list[list[Any]]:
    return [[s.kind, s.target, s.phase, s.batch] for s in schedule.steps]


def _schedule(steps: Any) -> Schedule:
    return Schedule(tuple(Step(str(k), str(t), str(p), int(b)) for k, t, p, b in steps))
