"""One run through every phase (topics, prepared job, observers, warm-up, load, drain, verdict) on a
fake stack: no JVM, no broker. What the phases do with Spark and Kafka is covered by tests/chaos;
this checks that the orchestrator calls them in order, hands each what the last made, records the
run's phases and cleans up."""

from __future__ import annotations

import json
import time
from dataclasses import asdict
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from pytest_streamchaos import Timing
from pytest_streamchaos.analysis.oracle import IdentityOracle
from pytest_streamchaos.harness import ChaosFixture
from pytest_streamchaos.observe.seen_names import Sampled
from pytest_streamchaos.records import OutputRecords, SentRecords, TimelineEvent
from pytest_streamchaos.runner.phases import drain, job, observers


class FakeKafka:
    bootstrap_servers = job_bootstrap_servers = "127.0.0.1:1"
    effective_conf: dict[str, str] = {}

    def __init__(self) -> None:
        self.topics: list[str] = []
        self.deleted: list[str] = []

    def create_topic(self, name: str, partitions: int = 1, config: Any = None) -> str:
        self.topics.append(name)
        return name

    def delete_topic(self, name: str) -> None:
        self.deleted.append(name)


class FakeJob:
    def __init__(self, workdir: Path, script: Path) -> None:
        self.notes: list[str] = []
        self.workdir = workdir
        self.event_log_dir = workdir / "events"
        self.effective_conf: dict[str, str] = {}
        self.script, self.args = script, ("arg",)
        self.progress = FakeProgress(self.event_log_dir)
        self.timeline: list[TimelineEvent] = []
        self.alive, self.returncode, self.name, self.launches, self.log_path = False, None, "driver", [], ""
        self.calls: list[str] = []

    def start(self) -> None:
        self.alive = True
        self.calls.append("start")

    def stop(self) -> None:
        self.alive = False
        self.calls.append("stop")

    def tail_log(self, n: int) -> str:
        return ""


class FakeLauncher:
    defaults: dict[str, str] = {}
    job: FakeJob | None = None

    @classmethod
    def for_cluster(cls, cluster: Any, root: Path, **kwargs: Any) -> FakeLauncher:
        return cls()

    def prepare(self, script: Path, **kwargs: Any) -> FakeJob:
        FakeLauncher.job = FakeJob(script.parent / "work", script)
        return FakeLauncher.job


def _batches(now: float) -> list[dict[str, Any]]:
    return [{"id": "q1", "batchId": n, "numInputRows": 10, "t_start": now - 3 + n, "t_end": now - 2.9 + n,
             "durationMs": {"triggerExecution": 100}, "sink": {"description": "KafkaSink", "numOutputRows": 10}}
            for n in range(3)]


class FakeProgress:
    def __init__(self, event_log_dir: Path) -> None:
        now = time.time()
        self.timeline = [TimelineEvent(now, "query_started", "query", {"id": "q1"})]
        self.batches, self.writes, self.masters = _batches(now), [], {}

    def poll(self) -> None:
        pass


class FakeGenerator:
    failure = client_stats = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.running, self.acked = False, 0

    def start(self) -> None:
        self.running, self.t0 = True, time.time()

    def stop(self) -> None:
        self.running = False

    def sent(self) -> SentRecords:
        send = np.linspace(self.t0, time.time(), 20)
        return SentRecords(np.arange(20, dtype=np.int64), np.zeros(20, dtype=np.int64), send, send)

    def stats(self) -> dict[str, Any]:
        return {}


class FakeCollector:
    failure = client_stats = None
    count, malformed, lost_to_retention, ids_seen = 20, 0, 0, 20
    errors: list[str] = []
    retention_gaps: list[Any] = []
    transaction_markers: dict[str, int] = {}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.last_arrival = time.time()
        self.stopped = False
        #: what the run's name checks see: records that carry their input id
        self.first_records = [Sampled(json.dumps({"id": i}).encode(), None, 1) for i in range(20)]

    def start(self) -> None:
        pass

    def stop(self, drain_timeout: float = 0.0) -> None:
        self.stopped = True

    def outputs(self) -> OutputRecords:
        return OutputRecords.from_lists([self.last_arrival] * 20, [[i] for i in range(20)])


class FakeWatcher:
    checkpoint_dir = "nowhere"

    def __init__(self, *args: Any) -> None:
        pass

    def starting_offsets_written(self) -> bool:
        return True

    def latest_committed_batch(self) -> None:
        return None


class FakeKafkaEvents:
    def __init__(self, *args: Any) -> None:
        pass

    def start(self) -> None:
        pass

    def stop(self) -> None:
        pass


@pytest.fixture
def fake_stack(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(job, "JobLauncher", FakeLauncher)
    for name, fake in (("Generator", FakeGenerator), ("Collector", FakeCollector),
                       ("CheckpointWatcher", FakeWatcher), ("KafkaWatcher", FakeKafkaEvents)):
        monkeypatch.setattr(observers, name, fake)
    monkeypatch.setattr(drain, "input_end_offsets", lambda bootstrap, topic: {0: 0})


def test_a_run_goes_through_every_phase_in_order_and_cleans_up(tmp_path: Path, fake_stack: None) -> None:
    (tmp_path / "job.py").write_text("")
    kafka, status = FakeKafka(), []
    cluster = SimpleNamespace(effective_conf={}, master_url="spark://fake:7077")
    chaos = ChaosFixture(cluster=cluster, kafka=kafka, workdir=tmp_path / "runs", test_dir=tmp_path,
                         status=status.append)
    oracle = IdentityOracle()
    run = chaos.run("job.py", rate=10, duration=1.0, timing=Timing(settle_seconds=0.3, trigger_seconds=0.5),
                    oracle=oracle)
    load = run.load
    assert chaos.runs == [run] and FakeLauncher.job is not None and FakeLauncher.job.calls == ["start", "stop"]
    assert load is not None and 0.9 <= load.ran_s < 3 and load.ended is None
    kinds = [e["kind"] for e in run.to_dict()["timeline"]]
    for a, b in [("job_submitted", "starting_offsets_fixed"), ("starting_offsets_fixed", "steady_state"),
                 ("steady_state", "load_end"), ("load_end", "caught_up"), ("caught_up", "drain_end")]:
        assert kinds.index(a) < kinds.index(b), (a, b, kinds)
    assert run.arguments["rate"] == 10 and run.arguments["end_on_recovery"] is False
    assert run.topics is not None and run.topics.input.endswith("-in") and sorted(kafka.deleted) == sorted(kafka.topics)
    assert run.facts.job is not None and run.facts.job.master == "spark://fake:7077" and run.facts.job.args == ["arg"]
    assert {s["phase"] for s in status} <= {"warm-up", "load", "drain"} and any(s["phase"] == "load" for s in status)
    assert run.lost == 0
    # the history the analysis got: typed facts (the report's JSON is written from them), the run's topics
    assert run.meta.items() >= {"load": asdict(load), "run": dict(run.arguments), "topics": run.topics.to_dict(),
                                "spark_master_used": "spark://fake:7077", "job_args": ["arg"]}.items()
    assert run.driver_launches == 0 and run.history.topics is run.topics
    assert oracle.topic is None and oracle.side_topic is None, "the run binds its own copy of the test's oracle"
