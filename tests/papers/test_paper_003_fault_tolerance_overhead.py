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
from papers_helpers import fault_numbers, ledger, paper_line

from pytest_streamchaos import JobSetup, Timing, kill_worker


def overhead_of(chaos, rate: float, label: str, **hdfs_run):
    """A fault-free run with the checkpoint on local disk, then the HDFS run (with the test's faults)."""
    local = ledger(chaos, rate=rate, duration=14, faults=False, setup=JobSetup(checkpoint="local"))
    hdfs = ledger(chaos, rate=rate, **hdfs_run, setup=JobSetup(checkpoint="hdfs"))
    print(local.describe(), hdfs.describe(), sep="\n")
    o = hdfs.overhead(local)
    print(o.describe())
    (f,) = hdfs.faults
    paper_line("003", label, p50_local=local.metrics.latency.baseline, p50_hdfs=hdfs.metrics.latency.baseline,
               p99_local=local.latency.baseline_p99, p99_hdfs=hdfs.latency.baseline_p99,
               p50_ratio=o.latency_p50, p99_ratio=o.latency_p99, throughput_ratio=o.throughput,
               back_to_normal=float(o.back_to_normal), **fault_numbers(hdfs, f))
    assert hdfs.meta["checkpoint"].startswith("hdfs://") and not local.meta["checkpoint"].startswith("hdfs://")
    assert local.lost == 0 and hdfs.lost == 0 and hdfs.meta["driver_launches"] == 1
    return o, f


@pytest.mark.papers
@pytest.mark.chaos(backend="local")  # HDFS runs on the local backend only
@kill_worker(after=10, restart_after=3)
def test_003_checkpoint_on_hdfs_costs_latency_not_throughput(chaos):
    o, f = overhead_of(chaos, 100, "local vs HDFS checkpoint, 100 rec/s (short)", duration=24)
    # Spark writes each micro-batch's offsets before it and its commit after it, synchronously: on HDFS
    # (NameNode RPCs, a block pipeline over two DataNodes per file) that sits on every batch's critical
    # path, so the median latency rises even at a low rate, where the paper's Flink (asynchronous
    # snapshots) showed "almost equal" latency; measured here: p50 x2.7 and x1.7 in two runs (the p99
    # ratio swung from 3.2 to 0.9 with the shared machine's noise). The job keeps up with the load.
    assert o.latency_p50 > 1.0 and o.within(max_latency_ratio=10.0, min_throughput_ratio=0.8), o.describe()
    # the worker kill costs neither records nor the application; the time back to normal is reported,
    # not asserted: it was 0 s (masked) in one run and not within the 13 s left in another
    assert f.system_detection_event == "executor_removed", f


@pytest.mark.papers
@pytest.mark.chaos(backend="local")
@pytest.mark.slow
@kill_worker(after=15, restart_after=3)
def test_003_full_higher_load(chaos):
    o, f = overhead_of(chaos, 400, "local vs HDFS checkpoint, 400 rec/s (full)", duration=45)
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
