"""The chaos fixture and the runner on Kubernetes (docs/kubernetes.md, issue 51): a user's Kafka-to-Kafka job,
unchanged (``format("kafka")``, Spark's defaults, ``localhost:9092`` and the topics hard-coded, its checkpoint as
its argument), submitted ``spark-submit --master k8s://https://127.0.0.1:<port>`` in client mode to the one-node
cluster the stack starts: the driver here, two executors as pods. The fault goes through the API server: an
executor pod deleted, Spark's allocator asks for another. Each test asserts on the run's timeline the effect it
claims, where Kubernetes' own events (the pods') and Spark's (executors removed and added) are.

Needs root and ``python -m pytest_streamchaos.prepare --k8s`` (skipped otherwise, with that line)."""

from pathlib import Path
from statistics import median

import pytest
from test_chaos_network_faults import assert_observer_spared, fault_window, window_median

from pytest_streamchaos import (
    NOT_RECOVERED,
    JobSetup,
    Load,
    Watch,
    delete_driver_pod,
    delete_pod,
    drain_node,
    evict_pod,
    network_delay,
    oom_kill_executor,
)
from pytest_streamchaos.observe.progress import SparkProgress
from pytest_streamchaos.stack.k8s.preflight import why_not

JOB = "jobs/orders_to_shipments.py"
WATCH = Watch(outputs={"shipments": None})
pytestmark = [pytest.mark.slow, pytest.mark.skipif(why_not() is not None, reason=str(why_not()))]


def setup() -> JobSetup:
    return JobSetup(args=["{checkpoint_dir}"], kafka_port=9092)


def load(duration: float | None = 15) -> Load:
    return Load(rate=100, duration=duration, inputs={"orders": None})


def _after(run, kind: str, since: float, **detail) -> list:
    return [e for e in run.timeline if e.kind == kind and e.t >= since
            and all(e.detail.get(k) == v for k, v in detail.items())]


def _faulted(chaos, seconds: float):
    """The job run at-least-once under ``seconds`` of load with the test's fault; the run and its injection."""
    run = chaos.run(JOB, guarantee="at-least-once", setup=setup(), load=load(seconds), watch=WATCH)
    print(run.describe())
    return run, next(e for e in run.timeline if e.kind == "fault_injected")


def _replaced_and_recovered(run, injected, pod: str) -> None:
    """Spark lost the pod's executor, a new executor pod ran, nothing was lost and the run recovered."""
    assert _after(run, "executor_removed", injected.t - 1), f"Spark removed the executor of pod {pod}"
    new = [e for e in _after(run, "k8s_pod_running", injected.t) if e.target != pod]
    assert new, f"a new executor pod came Running after pod {pod}'s loss"
    assert _after(run, "executor_pod_replaced", injected.t)
    assert run.lost == 0 and run.incorrect == 0
    assert run.recovery_time is not NOT_RECOVERED


@pytest.mark.chaos(spark="k8s")
def test_a_users_job_on_kubernetes_gets_a_verdict(chaos):
    run = chaos.run(JOB, guarantee="exactly-once", setup=setup(), load=load(), watch=WATCH)
    print(run.describe())
    assert run.expected > 1000 and run.lost == 0 and run.duplicates == 0 and run.incorrect == 0
    running = {e.target for e in run.timeline if e.kind == "k8s_pod_running"}
    assert len(running) >= 2, "two executor pods Running, on the timeline from the API server"


@pytest.mark.chaos(spark="k8s")
@delete_pod(after=8)
def test_an_executor_pod_deleted_through_the_api_is_replaced(chaos):
    run, injected = _faulted(chaos, 60)
    pod = injected.detail["pod"]
    gone = [e for e in run.timeline if e.kind in ("k8s_pod_terminating", "k8s_pod_gone") and e.target == pod]
    assert gone, f"the API server shows pod {pod} deleted"
    _replaced_and_recovered(run, injected, pod)


@pytest.mark.chaos(spark="k8s")
@evict_pod(after=8)
def test_an_executor_pod_evicted_through_the_eviction_api_is_replaced(chaos):
    run, injected = _faulted(chaos, 60)
    pod = injected.detail["pod"]
    evicted = [e for e in run.timeline if e.kind == "k8s_pod_terminating" and e.target == pod]
    marks = {injected.detail.get("disruption")} | {e.detail.get("disruption") for e in evicted}
    assert "EvictionByEvictionAPI" in marks, f"the API server marked pod {pod} evicted: {marks}"
    assert [e for e in run.timeline if e.kind == "k8s_pod_gone" and e.target == pod], f"pod {pod} gone"
    _replaced_and_recovered(run, injected, pod)


@pytest.mark.chaos(spark="k8s")
@drain_node(after=8, duration=20)
def test_a_drained_node_holds_the_replacements_pending_until_uncordoned(chaos):
    run, injected = _faulted(chaos, 75)
    healed = next(e for e in run.timeline if e.kind == "fault_healed")
    evicted = injected.detail["evicted"]
    assert injected.detail["cordoned"] is True and len(evicted) == 2, injected.detail
    for pod in evicted:
        marks = {e.detail.get("disruption") for e in run.timeline
                 if e.kind == "k8s_pod_terminating" and e.target == pod}
        assert "EvictionByEvictionAPI" in marks, f"pod {pod} evicted through the Eviction API: {marks}"
    pending = [e for e in run.timeline if e.kind == "executor_pod_pending"]
    assert pending and injected.t <= pending[0].t < healed.t, "a replacement waited Pending while cordoned"
    unschedulable = [e for e in _after(run, "k8s_event", injected.t, reason="FailedScheduling") if e.t < healed.t]
    assert unschedulable, "the scheduler said why: the node is unschedulable"
    assert not [e for e in run.timeline if e.kind == "k8s_pod_running" and injected.t < e.t < healed.t], \
        "no executor pod ran while the node was cordoned"
    running = [e for e in _after(run, "k8s_pod_running", healed.t) if e.target not in evicted]
    assert len({e.target for e in running}) >= 2, "both replacements Running after the uncordon"
    assert _after(run, "executor_pod_replaced", healed.t)
    assert run.lost == 0 and run.incorrect == 0
    assert run.recovery_time is not NOT_RECOVERED


@pytest.mark.chaos(spark="k8s")
@oom_kill_executor(after=8)
def test_an_executor_oom_killed_by_its_memory_limit_is_replaced(chaos):
    run, injected = _faulted(chaos, 60)
    pod = injected.detail["pod"]
    assert injected.detail["oom_kills"] >= 1 or injected.detail["reason"] == "OOMKilled", injected.detail
    ended = [e for e in run.timeline if e.kind == "k8s_pod_ended" and e.target == pod]
    assert ended and ended[0].detail["reason"] == "OOMKilled", f"Kubernetes reports pod {pod} OOMKilled: {ended}"
    assert ended[0].detail["exit_code"] == 137
    print("Spark:", [e.detail.get("reason") for e in _after(run, "executor_removed", injected.t - 1)])
    _replaced_and_recovered(run, injected, pod)


def cluster_setup() -> JobSetup:
    return JobSetup(args=["{checkpoint_dir}"], kafka_port=9092, deploy_mode="cluster")


def driver_pods_running(run) -> set[str]:
    """The driver pods the timeline shows Running (the job's driver_launched events name them)."""
    drivers = {e.detail.get("pod") for e in run.timeline if e.kind == "driver_launched"}
    return {e.target for e in run.timeline if e.kind == "k8s_pod_running" and e.target in drivers}


@pytest.mark.chaos(spark="k8s")
def test_a_cluster_mode_job_on_kubernetes_gets_a_verdict(chaos):
    """Cluster mode: the driver a pod (a Job's), the executors pods it asked for; the verdict from the driver's
    event log and the output, as in client mode."""
    run = chaos.run(JOB, guarantee="at-least-once", setup=cluster_setup(), load=load(), watch=WATCH)
    print(run.describe())
    assert run.expected > 1000 and run.lost == 0 and run.incorrect == 0
    assert len(driver_pods_running(run)) == 1, "one driver pod Running, on the timeline from the API server"
    executors = {e.target for e in run.timeline if e.kind == "k8s_pod_running"} - driver_pods_running(run)
    assert len(executors) >= 2, "two executor pods Running beside the driver pod"


@pytest.mark.chaos(spark="k8s")
@delete_driver_pod(after=8)
def test_a_driver_pod_deleted_is_restarted_by_its_job_from_the_checkpoint(chaos):
    # 120 s of load: the new driver's query runs again ~60 s after the deletion here (the Job's first back-off of
    # 10 s, then the driver's and the executors' JVMs started cold on 2 cores), and recovery is measured after it
    run = chaos.run(JOB, guarantee="at-least-once", setup=cluster_setup(), load=load(120), watch=WATCH)
    print(run.describe())
    injected = next(e for e in run.timeline if e.kind == "fault_injected")
    pod = injected.detail["pod"]
    assert any(e.kind in ("k8s_pod_terminating", "k8s_pod_gone") and e.target == pod for e in run.timeline), \
        f"the API server shows driver pod {pod} deleted"
    relaunched = [e for e in run.timeline if e.kind == "driver_launched" and e.t > injected.t]
    assert relaunched and relaunched[0].detail["pod"] != pod, "the Job made a new driver pod"
    assert relaunched[0].detail["pod"] in driver_pods_running(run), "the new driver pod came Running"
    assert any(e.kind == "driver_pod_replaced" for e in run.timeline)
    restarted = [e for e in run.timeline if e.kind == "query_started" and e.t > injected.t]
    assert restarted, "the query started again in the new driver (from its checkpoint)"
    assert run.lost == 0 and run.incorrect == 0
    assert run.recovery_time is not NOT_RECOVERED


def _delayed_and_back(run, ms: float) -> None:
    """The delay acted on the job's Kafka links from the pods: Toxiproxy's probe measured it, the median p50 latency
    rose by at least it while on and fell back after the heal; the generator was spared."""
    assert run.lost == 0 and run.incorrect == 0
    injected, healed = fault_window(run)
    assert injected.detail["mechanism"] == "toxiproxy", injected.detail
    assert 0.9 * ms <= injected.detail["measured_delay_ms"] <= 1.6 * ms, injected.detail
    baseline = run.metrics.baseline.latency
    # whole buckets from 3 s into the delay (the first outputs after it carry its full cost) to its heal; after:
    # from 8 s past the heal (the backlog of the delayed batches drained) to 4 s before the load's end
    during = window_median(run, "latency_p50", injected.t + 3, healed.t)
    after = window_median(run, "latency_p50", healed.t + 8, float(run.throughput.t[-1]) - 4)
    print(f"median p50 latency: baseline {baseline:.3f}s, during the delay {during:.3f}s, after {after:.3f}s")
    assert during - baseline >= ms / 1000, f"the {ms:g} ms delay added only {during - baseline:.3f}s to the p50"
    assert after - baseline < (during - baseline) / 2, f"the p50 latency did not fall back after the heal: {after:.3f}s"
    assert_observer_spared(run, clients=("generator",))  # the output topic is watched (Watch): no collector
    _driver_offsets_delayed(run, injected, healed, ms)


def _driver_offsets_delayed(run, injected, healed, ms: float) -> None:
    """The driver's own Kafka requests were held too: the source's ``latestOffset`` (the driver's admin client asking
    the brokers for the topic's end offsets, Spark's ``durationMs.latestOffset``) took at least one delayed round
    trip (2 x ``ms``) in a batch that started during the delay, and tens of ms before and after it."""
    progress = SparkProgress(Path(run.job_workdir) / "eventlog")
    progress.poll()
    offsets = [(b["t_start"], b["t_end"], b["durationMs"]["latestOffset"]) for b in progress.batches
               if b["batchId"] >= 2 and "latestOffset" in b.get("durationMs", {})]  # past the query's start
    before = [ms_ for start, end, ms_ in offsets if end < injected.t]
    during = [ms_ for start, end, ms_ in offsets if injected.t <= start < healed.t]
    after = [ms_ for start, end, ms_ in offsets if start > healed.t + 8]
    print(f"the driver's latestOffset: median before {median(before)} ms, during {during} ms, "
          f"median after {median(after)} ms")
    assert during and max(during) >= 2 * ms, f"no driver request held {2 * ms:g} ms during the delay: {during}"
    assert median(before) < ms / 2 and median(after) < ms / 2, (before, after)


@pytest.mark.chaos(spark="k8s")
@network_delay(ms=500, target="kafka", after=10, duration=14)
def test_a_kafka_delay_slows_the_executor_pods_links_and_heals(chaos):
    """Client mode: the executors' Kafka reads and writes go from their pods through the two-sided relay into
    Toxiproxy, so a 500 ms latency toxic on the job's Kafka links holds them."""
    run = chaos.run(JOB, guarantee="at-least-once", setup=setup(), load=load(45), watch=WATCH)
    print(run.describe())
    _delayed_and_back(run, 500)


@pytest.mark.chaos(spark="k8s")
@network_delay(ms=500, target="kafka", after=10, duration=14)
def test_a_kafka_delay_slows_the_driver_pods_links_too_and_heals(chaos):
    """Cluster mode: the driver pod's Kafka links (its end offsets' and metadata requests: ``latestOffset``) and the
    executor pods' go through the relay into Toxiproxy alike."""
    run = chaos.run(JOB, guarantee="at-least-once", setup=cluster_setup(), load=load(45), watch=WATCH)
    print(run.describe())
    _delayed_and_back(run, 500)
