"""Seed paper 003, the study of the overhead of Apache Flink's fault-tolerance mechanisms with Intel
HiBench (Fixwindow, Flink 1.4.2, six 24-core nodes, checkpoints every second on HDFS): in regular
operation checkpointing costs "almost" nothing at 200K records/s and up to 1-2 s of latency at
300-500K (p75 latency 3-10x the run without checkpoints); after a TaskManager kill, no output for
~90 s, and the backlog is worked off in 60 s at 200K records/s (150 s at 300K, 170 s at 400K, never
at 500K).

Spark always checkpoints a streaming query (offsets and commits per micro-batch), so the comparison
here is the checkpoint's location: local disk vs the stack's HDFS (NameNode + 2 DataNodes, replication
2), as ratios of the fault-free steady state (:func:`~pytest_streamchaos.analysis.versus.overhead`),
and the time back to normal after a worker kill with the checkpoint on HDFS. Full (``-m slow``): also
less frequent commits (a 5 s trigger), and a higher rate.
"""

import pytest
from papers_helpers import checkpoint_write_ms, fault_numbers, ledger, paper_line

from pytest_streamchaos import JobSetup, Timing, kill_worker


def overhead_of(chaos, rate: float, label: str, **hdfs_run):
    """A fault-free run with the checkpoint on local disk, then the HDFS run (with the test's faults)."""
    local = ledger(chaos, rate=rate, duration=14, faults=False, setup=JobSetup(checkpoint="local"))
    hdfs = ledger(chaos, rate=rate, **hdfs_run, setup=JobSetup(checkpoint="hdfs"))
    print(local.describe(), hdfs.describe(), sep="\n")
    o = hdfs.overhead(local)
    writes = checkpoint_write_ms(local), checkpoint_write_ms(hdfs)
    print(o.describe(), f"checkpoint write per batch: local {writes[0]:.0f} ms, HDFS {writes[1]:.0f} ms")
    (f,) = hdfs.faults
    paper_line("003", label, p50_local=local.metrics.latency.baseline, p50_hdfs=hdfs.metrics.latency.baseline,
               p99_local=local.latency.baseline_p99, p99_hdfs=hdfs.latency.baseline_p99,
               p50_ratio=o.latency_p50, p99_ratio=o.latency_p99, throughput_ratio=o.throughput,
               back_to_normal=float(o.back_to_normal), write_ms_local=writes[0], write_ms_hdfs=writes[1],
               **fault_numbers(hdfs, f))
    assert hdfs.checkpoint.startswith("hdfs://") and not local.checkpoint.startswith("hdfs://")
    assert local.lost == 0 and hdfs.lost == 0 and hdfs.driver_launches == 1
    return o, f, writes


@pytest.mark.slow  # ./dev test's budget: every paper's test is slow (tests/papers/conftest.py)
@pytest.mark.papers
@pytest.mark.chaos(backend="local")  # HDFS runs on the local backend only
@kill_worker(after=10, restart_after=3)
def test_003_checkpoint_on_hdfs_costs_neither_write_time_nor_throughput_at_low_load(chaos):
    o, f, (local_ms, hdfs_ms) = overhead_of(chaos, 100, "local vs HDFS checkpoint, 100 rec/s (short)",
                                           duration=24)
    # Spark writes each micro-batch's offsets before it and its commit after it, synchronously, so a
    # slower store would sit on every batch's critical path. Spark's own timings of those two writes
    # (walCommit + commitOffsets) say it does not here, as the paper found for Flink at a low load: per
    # batch local 105 / 79 / 84 / 119 ms, HDFS 107 / 79 / 83 / 94 ms in four runs. The end-to-end p50 ratio
    # is only reported: x0.80 to x2.7 over nine runs, its spread the machine's, not the writes'.
    assert 0 < hdfs_ms < 2.0 * local_ms, (local_ms, hdfs_ms)
    # the job keeps up with the load on HDFS: no throughput lost (x0.92-x1.04 measured)
    assert o.within(max_latency_ratio=10.0, min_throughput_ratio=0.8), o.describe()
    # the worker kill costs neither records nor the application; the time back to normal is reported,
    # not asserted: it was 0 s (masked) in one run and not within the 13 s left in another
    assert f.system_detection_event == "executor_removed", f


@pytest.mark.papers
@pytest.mark.chaos(backend="local")
@pytest.mark.slow
@kill_worker(after=15, restart_after=3)
def test_003_full_higher_load(chaos):
    o, f, _ = overhead_of(chaos, 400, "local vs HDFS checkpoint, 400 rec/s (full)", duration=45)
    assert o.throughput >= 0.9 and f.recovered


@pytest.mark.papers
@pytest.mark.chaos(backend="local")
@pytest.mark.slow
def test_003_full_less_frequent_commits(chaos):
    """Fewer checkpoint commits: the example pipeline's trigger at 5 s instead of 1 s (a public job sets
    it in its code), both on HDFS: latency rises by about the trigger, commits are 5x fewer."""
    on_hdfs = JobSetup(checkpoint="hdfs")
    every_1s = chaos.run("pipelines/enrich_at_least_once.py", rate=100, duration=20, setup=on_hdfs,
                         timing=Timing(trigger_seconds=1.0))
    every_5s = chaos.run("pipelines/enrich_at_least_once.py", rate=100, duration=20, setup=on_hdfs,
                         timing=Timing(trigger_seconds=5.0))
    o = every_5s.overhead(every_1s)
    paper_line("003", "trigger 5 s vs 1 s on HDFS (full)", p50_ratio=o.latency_p50, p99_ratio=o.latency_p99,
               throughput_ratio=o.throughput, batches_1s=len(every_1s.metrics.batches),
               batches_5s=len(every_5s.metrics.batches))
    assert o.latency_p50 > 1.0 and o.throughput >= 0.9
