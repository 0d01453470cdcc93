"""The planted moment-bug jobs of ``tests/chaos/jobs`` as tests drive them: their records, the paths
they hard-code, and one ``chaos.run`` each. Shared by the chaos tests (``test_explore_moments.py``,
``test_explore.py``, whose explored sessions import it too) and ``benchmarks/bench_explore.py``."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

#: this machine's cache of jars and binaries, read when the test module is imported: ``pytester`` points
#: HOME at its own directory, and a nested session that followed it would download Kafka, the connector
#: and Toxiproxy again, once per nested session
CACHE_HOME = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")


def nested_session_env(monkeypatch: pytest.MonkeyPatch, *paths: Path) -> None:
    """The environment of a nested pytest session: ``paths`` first on PYTHONPATH (this checkout's plugin,
    this module), the machine's cache of prepared jars and binaries."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([*map(str, paths), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.setenv("XDG_CACHE_HOME", CACHE_HOME)

def explored_session(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, text: str,
                     clear: Callable[[], None], timeout: float, test: str = "",
                     ret: pytest.ExitCode = pytest.ExitCode.OK) -> tuple[pytest.RunResult, dict]:
    """Run ``text`` as ``test_explored.py`` (``test``: only that test of it) in a pytest session of its own
    (this checkout's plugin and this folder's modules first on its path), ``clear`` the jobs' paths after it;
    its result and the ``explore`` part of its one JSON report entry. It must end with ``ret`` (passed): the
    session's output is printed either way."""
    here = Path(__file__).resolve().parent
    nested_session_env(monkeypatch, here.parents[1], here)
    pytester.makepyfile(test_explored=text)
    (pytester.path / "report.json").unlink(missing_ok=True)
    try:
        result = pytester.runpytest_subprocess(f"test_explored.py{'::' + test if test else ''}", "-p",
                                               "no:cacheprovider", "--chaos-report=report.json", timeout=timeout)
    finally:
        clear()
    print(result.stdout.str())
    assert result.ret == ret, result.stdout.str()
    [doc] = json.loads((pytester.path / "report.json").read_text())
    return result, doc["explore"]

JOBS = Path(__file__).parent / "jobs"
LAKE = "/tmp/streamchaos-test-clicks-lake"
GUARDED_LAKE = "/tmp/streamchaos-test-clicks-guarded-lake"
#: what the jobs hard-code under /tmp (absent before each test and removed after it)
PATHS = (LAKE, "/tmp/streamchaos-test-clicks-chk", GUARDED_LAKE, "/tmp/streamchaos-test-clicks-guarded-chk",
         "/tmp/streamchaos-test-clicks-by-batch-lake", "/tmp/streamchaos-test-clicks-by-batch-chk",
         "/tmp/streamchaos-test-payments-chk", "/tmp/streamchaos-test-payments-drops-chk")


def click(rec: Any) -> dict:
    return {"clickId": str(rec.id), "userId": rec.key, "url": f"/ad/{rec.key_index}", "clickedAt": rec.ts}


def payment(rec: Any) -> dict:
    return {"paymentId": str(rec.id), "account": rec.key, "amount": round(rec.rng.uniform(1, 500), 2)}


def paths_fixture(paths: Sequence[str]) -> tuple[Callable[[], None], Any]:
    """``clear_paths`` (remove ``paths``) and the autouse fixture ``hardcoded_paths``: the jobs' hard-coded
    paths absent before each test of a module that imports the fixture, and removed after it."""

    def clear_paths() -> None:
        for p in paths:
            shutil.rmtree(p, ignore_errors=True)

    @pytest.fixture(autouse=True)
    def hardcoded_paths() -> Iterator[None]:
        clear_paths()
        yield
        clear_paths()

    return clear_paths, hardcoded_paths


clear_paths, hardcoded_paths = paths_fixture(PATHS)


def lake(chaos: Any, guarantee: str = "exactly-once", duration: float = 20, job: str | None = None) -> Any:
    """The non-idempotent ``foreachBatch`` lake writer, declared ``guarantee`` (``job``: a variant of its
    file, e.g. with a processing-time trigger)."""
    return chaos.run(job or str(JOBS / "clicks_to_json_lake.py"), rate=100, duration=duration, guarantee=guarantee,
                     kafka_port=9092, inputs={"clicks": click}, outputs={f"file:{LAKE}": "clickId"})


def guarded_lake(chaos: Any, guarantee: str = "exactly-once", duration: float = 20, job: str | None = None) -> Any:
    """The ``foreachBatch`` lake writer whose replay guard (a marker per batch) is written before the data: it
    loses a batch when its driver dies while the batch's tasks write (``job``: a variant of its file)."""
    return chaos.run(job or str(JOBS / "clicks_to_guarded_lake.py"), rate=100, duration=duration,
                     guarantee=guarantee, kafka_port=9092, inputs={"clicks": click},
                     outputs={f"file:{GUARDED_LAKE}": "clickId"})


def ledger(chaos: Any, guarantee: str = "exactly-once", duration: float = 20, job: str | None = None) -> Any:
    """The Kafka-sink ledger, declared ``guarantee`` (``job``: a variant of its file)."""
    return chaos.run(job or str(JOBS / "payments_to_ledger.py"), rate=100, duration=duration, guarantee=guarantee,
                     kafka_port=9092, inputs={"payments": payment}, outputs={"ledger": "key"})
