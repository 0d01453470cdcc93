"""The chaos fixture and the runner on Kubernetes (docs/kubernetes.md, issue 51): a user's Kafka-to-Kafka job,
unchanged (``format("kafka")``, Spark's defaults, ``localhost:9092`` and the topics hard-coded, its checkpoint as
its argument), submitted ``spark-submit --master k8s://https://127.0.0.1:<port>`` in client mode to the one-node
cluster the stack starts: the driver here, two executors as pods. The fault goes through the API server: an
executor pod deleted, Spark's allocator asks for another. Each test asserts on the run's timeline the effect it
claims, where Kubernetes' own events (the pods') and Spark's (executors removed and added) are.

Needs root and ``python -m pytest_streamchaos.prepare --k8s`` (skipped otherwise, with that line)."""

import pytest

from pytest_streamchaos import NOT_RECOVERED, JobSetup, Load, Watch, delete_driver_pod, delete_pod
from pytest_streamchaos.stack.k8s.preflight import why_not

JOB = "jobs/orders_to_shipments.py"
WATCH = Watch(outputs={"shipments": None})
pytestmark = [pytest.mark.slow, pytest.mark.skipif(why_not() is not None, reason=str(why_not()))]


def setup() -> JobSetup:
    return JobSetup(args=["{checkpoint_dir}"], kafka_port=9092)


def load(duration: float | None = 15) -> Load:
    return Load(rate=100, duration=duration, inputs={"orders": None})


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
    run = chaos.run(JOB, guarantee="at-least-once", setup=setup(), load=load(60), watch=WATCH)
    print(run.describe())
    injected = next(e for e in run.timeline if e.kind == "fault_injected")
    pod = injected.detail["pod"]
    gone = [e for e in run.timeline if e.kind in ("k8s_pod_terminating", "k8s_pod_gone") and e.target == pod]
    assert gone, f"the API server shows pod {pod} deleted"
    removed = [e for e in run.timeline if e.kind == "executor_removed" and e.t >= injected.t - 1]
    assert removed, "Spark removed the executor of the deleted pod"
    new = [e for e in run.timeline if e.kind == "k8s_pod_running" and e.t > injected.t and e.target != pod]
    assert new, "a new executor pod came Running after the deletion"
    assert any(e.kind == "executor_pod_replaced" for e in run.timeline)
    assert run.lost == 0 and run.incorrect == 0
    assert run.recovery_time is not NOT_RECOVERED


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
