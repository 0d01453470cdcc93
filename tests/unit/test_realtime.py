"""Real-time mode: the trigger and sink read from a job's script, the one-line refusals, and the two checks
(latency per record around a fault; duplicates only within the last interval) on synthetic traces with known
answers."""

from pathlib import Path

import numpy as np
import pytest
from synthetic import T0, stateless_trace

from pytest_streamchaos.analysis.checkers.realtime import RealTimeLatency, ReplayBound, record_latencies
from pytest_streamchaos.history import History
from pytest_streamchaos.records import FAULT_INJECTED, OutputRecords, TimelineEvent
from pytest_streamchaos.spark import realtime


def _job(tmp_path: Path, body: str) -> Path:
    script = tmp_path / "job.py"
    script.write_text(body)
    return script


KAFKA_RT = '''
q = (df.where("length(value) > 0").writeStream.format("kafka")
     .option("topic", "out").outputMode("update")
     .trigger(realTime="5 seconds").start())
'''


def test_a_real_time_trigger_is_found_with_its_interval_and_sink(tmp_path):
    rt = realtime.find(_job(tmp_path, KAFKA_RT))
    assert rt == realtime.RealTime(5.0, "job.py:4", "kafka")
    assert realtime.refusal(rt, spark_version="4.2.0") is None


def test_a_processing_time_job_is_not_real_time(tmp_path):
    assert realtime.find(_job(tmp_path, 'q = df.writeStream.trigger(processingTime="1 second").start()\n')) is None


@pytest.mark.parametrize(("text", "seconds"), [("5 seconds", 5.0), ("500 milliseconds", 0.5), ("1 minute", 60.0),
                                               ("2s", 2.0), ("soon", None)])
def test_intervals(text, seconds):
    assert realtime.interval_seconds(text) == seconds


@pytest.mark.parametrize(("chain", "named"), [
    ('df.writeStream.foreachBatch(write).trigger(realTime="5 seconds").start()', "foreachBatch"),
    ('df.writeStream.format("parquet").option("path", "/o").trigger(realTime="5 seconds").start()', "parquet"),
    ('df.writeStream.trigger(realTime="5 seconds").toTable("t")', "toTable"),
])
def test_a_sink_the_mode_does_not_support_is_refused_in_one_line(tmp_path, chain, named):
    why = realtime.refusal(realtime.find(_job(tmp_path, f"q = {chain}\n")), spark_version="4.2.0")
    assert why is not None and "\n" not in why and named in why and "job.py:1" in why
    assert "format('kafka') or foreach" in why


def test_spark_3_5_has_no_real_time_mode(tmp_path):
    why = realtime.refusal(realtime.find(_job(tmp_path, KAFKA_RT)), spark_version="3.5.7")
    assert why is not None and "\n" not in why and "Spark 4.1 or later" in why and "3.5.7" in why


def test_too_few_cores_names_what_it_needs(tmp_path):
    rt = realtime.find(_job(tmp_path, KAFKA_RT))
    assert realtime.cores_refusal(rt, partitions=2, cores=2, where="the cluster") is None
    why = realtime.cores_refusal(rt, partitions=4, cores=2, where="the cluster (2 workers x 1 core)")
    assert why is not None and "\n" not in why and "needs 4 free cores" in why and "offers 2" in why


def _with_fault(trace, at):
    trace.timeline.append(TimelineEvent(T0 + at, FAULT_INJECTED, "driver", {"fault": "kill_driver", "label": "f"}))
    return History.of(trace)


def test_latency_per_record_before_and_after_a_fault():
    trace = stateless_trace(rate=100, duration=60, latency=0.2, warmup=5)
    _, latency = record_latencies(History.of(trace))
    assert np.allclose(latency, 0.2)
    result = RealTimeLatency(settle=5.0).check(_with_fault(trace, 30.0))
    assert result.ok is True
    assert result.numbers["before"]["p50"] == pytest.approx(0.2)
    assert result.numbers["after"]["records"] > 0 and result.numbers["after"]["p99"] == pytest.approx(0.2)


def _replayed(rate, ids, at):
    """A run at ``rate`` (latency 0.2 s) whose ``ids`` are output once more at ``at`` s: a replay."""
    trace = stateless_trace(rate=rate, duration=60, latency=0.2)
    out = trace.outputs
    arrival = np.concatenate((out.arrival_ts, np.full(ids.size, T0 + at)))
    all_ids = np.concatenate((out.ids, ids))
    o = np.argsort(arrival, kind="stable")
    trace.outputs = OutputRecords(arrival[o], np.arange(all_ids.size + 1, dtype=np.int64), all_ids[o])
    return trace


def test_replay_within_the_last_interval_holds_and_an_older_one_does_not():
    # fault at 30 s, the last commit at 26 s: ids output in [26, 30) are written again once it restarted (33 s)
    rate, interval = 100, 5.0
    replayed = np.arange(int(25.8 * rate), int(29.8 * rate))
    held = ReplayBound(interval).check(_with_fault(_replayed(rate, replayed, 33.0), 30.0))
    assert held.ok is True and held.numbers["duplicates"] == replayed.size
    assert held.numbers["oldest_s"] == pytest.approx(4.0, abs=0.05) and held.numbers["per_fault"] == [replayed.size]
    older = np.arange(int(19.8 * rate), int(29.8 * rate))  # 10 s back: two intervals
    broken = ReplayBound(interval).check(_with_fault(_replayed(rate, older, 33.0), 30.0))
    assert broken.ok is False
    assert broken.numbers["outside_bound"] == pytest.approx(older.size - (interval + 1.0) * rate, abs=2)


def test_duplicates_no_fault_explains_break_the_bound():
    result = ReplayBound(5.0).check(History.of(stateless_trace(rate=100, duration=30, duplicate=np.arange(10))))
    assert result.ok is False and result.numbers["outside_bound"] == 10


def test_an_interval_the_script_does_not_spell_out_is_real_time_all_the_same(tmp_path):
    rt = realtime.find(_job(tmp_path, 'import sys\nI = sys.argv[1]\n'
                                      'q = df.writeStream.format("kafka").trigger(realTime=I).start()\n'))
    assert rt == realtime.RealTime(None, "job.py:3", "kafka")


def test_the_job_is_sized_to_a_core_per_partition_or_refused(tmp_path):
    rt = realtime.find(_job(tmp_path, KAFKA_RT))
    conf, note = realtime.sized(rt, partitions=3, worker_cores=[2, 2], job_conf={"spark.cores.max": "2"}, own={})
    assert conf == {"spark.cores.max": "3"} and "raised from 2 to 3" in note
    enough = realtime.sized(rt, partitions=2, worker_cores=[1, 1], job_conf={"spark.cores.max": "2"}, own={})
    assert enough == ({}, None)
    with pytest.raises(ValueError, match="needs 4 free cores for 4 partitions; the cluster \\(2 workers\\) offers 2"):
        realtime.sized(rt, partitions=4, worker_cores=[1, 1], job_conf={}, own={})
    with pytest.raises(ValueError, match="the job's spark.cores.max offers 1"):
        realtime.sized(rt, partitions=2, worker_cores=None, job_conf={}, own={"spark.cores.max": "1"})


def test_on_yarn_the_job_is_sized_by_its_executors(tmp_path):
    """YARN gives a query its executors' cores (spark.cores.max is standalone's): two of one core by default."""
    rt = realtime.find(_job(tmp_path, KAFKA_RT))
    yarn = {"spark.executor.instances": "2"}
    assert realtime.sized_on_yarn(rt, partitions=2, job_conf=yarn, own={}) == ({}, None)
    conf, note = realtime.sized_on_yarn(rt, partitions=5, job_conf=yarn, own={})
    assert conf == {"spark.executor.instances": "5"} and "raised from 2 to 5" in note
    conf, _ = realtime.sized_on_yarn(rt, partitions=5, job_conf=yarn, own={"spark.executor.cores": "2"})
    assert conf == {"spark.executor.instances": "3"}  # 3 x 2 cores for 5 partitions
    with pytest.raises(ValueError, match="needs 3 free cores for 3 partitions; the job's spark.executor.instances x "
                                         "spark.executor.cores offers 1"):
        realtime.sized_on_yarn(rt, partitions=3, job_conf=yarn, own={"spark.executor.instances": "1"})


def test_a_run_of_a_real_time_job_with_foreachbatch_is_refused_before_anything_starts(tmp_path):
    from pytest_streamchaos.runner.errors import RunError
    from pytest_streamchaos.runner.spec import checked_real_time

    job = _job(tmp_path, 'q = df.writeStream.foreachBatch(f).trigger(realTime="5 seconds").start()\n')
    with pytest.raises(RunError, match="foreachBatch, which real-time mode does not support"):
        checked_real_time(job)
    assert checked_real_time(_job(tmp_path, KAFKA_RT)).interval == 5.0
