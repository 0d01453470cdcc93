"""The example pipelines run for real: Spark standalone cluster + real Kafka brokers, a small input
produced by the generator (or by hand), the output consumed and checked record by record."""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from confluent_kafka import Producer

from pytest_streamchaos.job.config import JobConfig
from pytest_streamchaos.job.eos import control_topic_for
from pytest_streamchaos.observe.collector import Collector
from pytest_streamchaos.spark.launcher import JobLauncher
from pytest_streamchaos.stack.driver.job import SparkJob
from pytest_streamchaos.workload.generator import Generator

pytestmark = pytest.mark.integration

PIPELINES = Path(__file__).resolve().parents[2] / "pipelines"
#: One executor core per job: enough for these rates, and quicker to start on a small machine.
CONF = {"spark.cores.max": "1"}
TIMEOUT = 300.0  # JVM start-up is slow when the 2 cores are shared


@pytest.fixture
def launcher(spark_cluster, tmp_path: Path):
    launcher = JobLauncher.for_cluster(spark_cluster, tmp_path / "jobs", conf=CONF)
    yield launcher
    launcher.stop_all()


def _config(kafka, tmp_path: Path, inputs: list[str], output: str, **extra) -> JobConfig:
    return JobConfig(kafka.bootstrap_servers, inputs[0], output, str(tmp_path / "checkpoint"), 1.0,
                     input_topics=tuple(inputs), **extra)


def _generate(kafka, topic: str, n: int, **kwargs) -> Generator:
    """Produce ``n`` records at a modest rate and wait until all are acknowledged."""
    gen = Generator(kafka.bootstrap_servers, topic, rate=kwargs.pop("rate", 50), max_records=n, **kwargs).start()
    deadline = time.monotonic() + 120
    while gen.produced < n:
        if time.monotonic() > deadline:
            raise TimeoutError(f"generator produced {gen.produced}/{n} records in 120 s; errors {gen.errors[-3:]}")
        time.sleep(0.1)
    gen.stop()
    assert gen.acked == n, gen.stats()
    return gen


def _wait(job: SparkJob, collector: Collector, predicate, what: str) -> None:
    """Wait for the collector to satisfy ``predicate``, failing early (with the log) if the job dies."""
    job.wait_for(lambda _j: predicate(collector), TIMEOUT, what)


def _id_counts(collector: Collector) -> Counter:
    return Counter(collector.outputs().ids.tolist())


def test_enrich_at_least_once_every_good_id_exactly_once(kafka, launcher: JobLauncher, tmp_path: Path):
    src, out = kafka.create_topic("in", 2), kafka.create_topic("out", 2)
    job = launcher.submit(PIPELINES / "enrich_at_least_once.py", config=_config(kafka, tmp_path, [src], out))
    sent = _generate(kafka, src, 400, poison=0.05).sent()
    good = sent.ids[~sent.poison]
    assert 0 < len(good) < len(sent)  # poison records are in the input
    with Collector(kafka.bootstrap_servers, out) as collector:
        _wait(job, collector, lambda c: c.has_seen(good), f"all {len(good)} good ids in the output")
        assert job.alive  # the poison records, read in the same batches, did not crash the query
        job.stop()
    counts = _id_counts(collector)
    assert set(counts) == set(good.tolist())  # nothing lost, no poison id leaked through
    assert max(counts.values()) == 1  # no fault, so no replay: exactly once
    assert collector.malformed == 0
    # the enrichment itself
    first = _first_record(kafka, out)
    assert first["key_num"] == int(first["key"][1:]) and first["bucket"] == first["key_num"] % 10
    assert first["processed_ms"] >= first["ts"]


def _first_record(kafka, topic: str) -> dict:
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": kafka.bootstrap_servers, "group.id": "t", "enable.auto.commit": False})
    try:
        c.assign([TopicPartition(topic, 0, 0), TopicPartition(topic, 1, 0)])
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                return json.loads(m.value())
        raise TimeoutError(f"no record in {topic} within 30 s")
    finally:
        c.close()


def test_enrich_exactly_once_every_good_id_exactly_once(kafka, launcher: JobLauncher, tmp_path: Path):
    src, out = kafka.create_topic("in", 2), kafka.create_topic("out", 2)
    kafka.create_topic(control_topic_for(out), 1)  # the sink's commit log, one partition
    cfg = _config(kafka, tmp_path, [src], out, transactional_id=f"eos-{out}")
    job = launcher.submit(PIPELINES / "enrich_exactly_once.py", config=cfg)
    good = np.array([], dtype=np.int64)
    with Collector(kafka.bootstrap_servers, out) as collector:  # read_committed
        # In two halves, the second sent once the first is out: at least two transactions then write
        # each partition, so the marker between them shows as an offset jump. (A job that starts after
        # all input was sent reads it in one batch, one transaction per partition, whose marker comes
        # after the last record read, where nothing shows it.)
        for half in (0, 150):
            sent = _generate(kafka, src, 150, poison=0.05, id_start=half).sent()
            good = np.concatenate([good, sent.ids[~sent.poison]])
            _wait(job, collector, lambda c, ids=good: c.has_seen(ids), f"all {len(good)} good ids committed to {out}")
        job.stop()
    counts = _id_counts(collector)
    assert collector.transaction_markers, "the sink writes transactionally"
    assert set(counts) == set(good.tolist()) and max(counts.values()) == 1


def test_window_count_finalized_windows_hold_exactly_their_ids(kafka, launcher: JobLauncher, tmp_path: Path):
    src, out = kafka.create_topic("in", 2), kafka.create_topic("out", 1)
    job = launcher.submit(PIPELINES / "window_count.py", config=_config(kafka, tmp_path, [src], out),
                          env={"STREAMCHAOS_WINDOW_SECONDS": "3", "STREAMCHAOS_WATERMARK_SECONDS": "1"})
    sent = _generate(kafka, src, 600, rate=50, key_space=4, poison=0.02).sent()
    ok = ~sent.poison
    ids, keys = sent.ids[ok], sent.keys[ok]
    ts_ms = np.rint(sent.event_ts[ok] * 1000).astype(np.int64)
    start = ts_ms - ts_ms % 3000
    expected: dict[tuple[str, int], set[int]] = {}
    for i, k, s in zip(ids.tolist(), keys.tolist(), start.tolist(), strict=True):
        expected.setdefault((f"k{k}", s), set()).add(i)
    # Finalized once the watermark (max event time - 1 s) has passed the window end.
    must_close = {w for w in expected if w[1] + 3000 <= ts_ms.max() - 1000}
    assert len(must_close) >= 8

    windows: dict[tuple[str, int], list[dict]] = {}

    def read_all(_job) -> bool:
        for m in reader.poll(timeout=0.2):
            rec = json.loads(m.value())
            windows.setdefault((rec["key"], rec["window_start"]), []).append(rec)
        return must_close <= set(windows)

    reader = _RawReader(kafka.bootstrap_servers, out)
    try:
        job.wait_for(read_all, TIMEOUT, f"{len(must_close)} finalized windows")
        job.stop()
        read_all(job)
    finally:
        reader.close()
    for w, recs in windows.items():
        assert len(recs) == 1, f"window {w} emitted {len(recs)} times"  # append mode: once, when final
        rec = recs[0]
        assert rec["window_end"] - rec["window_start"] == 3000
        assert len(rec["ids"]) == rec["count"] == len(set(rec["ids"]))
        assert set(rec["ids"]) == expected[w], f"window {w}"


def test_stream_join_emits_each_matching_id_once(kafka, launcher: JobLauncher, tmp_path: Path):
    left, right, out = kafka.create_topic("left", 1), kafka.create_topic("right", 1), kafka.create_topic("out", 1)
    job = launcher.submit(PIPELINES / "stream_join.py", config=_config(kafka, tmp_path, [left, right], out))
    p = Producer({"bootstrap.servers": kafka.bootstrap_servers, "enable.idempotence": True})
    now = int(time.time() * 1000)

    def rec(i: int, dt: int) -> bytes:
        return json.dumps({"id": i, "key": f"k{i % 7}", "ts": now + i * 10 + dt}).encode()

    for i in range(200):
        p.produce(left, rec(i, 0))
        if i % 2 == 0:
            p.produce(right, rec(i, 500))  # the matching event, half a second later
    for i in range(1000, 1050):
        p.produce(right, rec(i, 0))  # right-only: must not be emitted
    p.produce(left, b"not json")
    p.produce(right, b'{"id": 3, "key": "k3", "ts": ')  # truncated: filtered, never matches
    assert p.flush(30) == 0
    want = set(range(0, 200, 2))
    with Collector(kafka.bootstrap_servers, out) as collector:
        _wait(job, collector, lambda c: c.has_seen(list(want)), f"all {len(want)} joined ids")
        job.stop()
    counts = _id_counts(collector)
    assert set(counts) == want and max(counts.values()) == 1


def test_broken_pipeline_drops_and_repeats_the_documented_ids(kafka, launcher: JobLauncher, tmp_path: Path):
    src, out = kafka.create_topic("in", 2), kafka.create_topic("out", 2)
    job = launcher.submit(PIPELINES / "enrich_drops_and_repeats.py", config=_config(kafka, tmp_path, [src], out))
    sent = _generate(kafka, src, 400).sent()
    ids = sent.ids.tolist()
    expected = Counter({i: (0 if i % 97 == 0 else 2 if i % 89 == 0 else 1) for i in ids})
    expected = +expected  # drop zero counts
    total = sum(expected.values())
    with Collector(kafka.bootstrap_servers, out) as collector:
        _wait(job, collector, lambda c: c.count >= total, f"{total} outputs")
        job.stop()
    counts = _id_counts(collector)
    assert counts == expected
    lost = sorted(set(ids) - set(counts))
    repeated = sorted(i for i, n in counts.items() if n > 1)
    assert lost == [i for i in ids if i % 97 == 0] and lost  # what the validator must call lost
    assert repeated == [i for i in ids if i % 89 == 0 and i % 97 != 0] and repeated


class _RawReader:
    """All records of a topic from the beginning (assign, no group offsets)."""

    def __init__(self, servers: str, topic: str) -> None:
        from confluent_kafka import Consumer, TopicPartition

        self._c = Consumer({"bootstrap.servers": servers, "group.id": "t", "enable.auto.commit": False})
        parts = self._c.list_topics(topic, timeout=10).topics[topic].partitions
        self._c.assign([TopicPartition(topic, p, 0) for p in parts])

    def poll(self, timeout: float) -> list:
        return [m for m in self._c.consume(1000, timeout=timeout) if m.error() is None]

    def close(self) -> None:
        self._c.close()
