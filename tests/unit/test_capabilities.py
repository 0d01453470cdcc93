"""A fault kind declares the cluster capabilities it needs (stack/capabilities.py); a run refuses a fault its
session's cluster cannot serve when it is planned -- before anything starts -- in one line naming the fault,
the cluster manager and the missing capability. The clusters here are the real classes, built and never
started: what they can serve is their class's, so no JVM, broker or YARN is needed to know it."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_streamchaos.faults.registry import KINDS, kind_of, parse, refused_by_stack
from pytest_streamchaos.harness import ChaosFixture
from pytest_streamchaos.stack import capabilities
from pytest_streamchaos.stack.connect.cluster import ConnectSparkCluster
from pytest_streamchaos.stack.connect.yarn import ConnectMiniYarnSparkCluster, ConnectYarnSparkCluster
from pytest_streamchaos.stack.k8s.spark import K8sSparkCluster
from pytest_streamchaos.stack.kraft.attached import AttachedKafka
from pytest_streamchaos.stack.local import LocalKafkaCluster, LocalSparkCluster
from pytest_streamchaos.stack.yarn.attach import AttachedYarn
from pytest_streamchaos.stack.yarn.rest import ClusterInfo, ResourceManagerApi
from pytest_streamchaos.stack.yarn.spark import YarnSparkCluster

#: the smallest arguments of each kind's mark
ARGS: dict[str, dict] = {"pause": {"target": "worker"}, "network_delay": {"ms": 50}, "packet_loss": {"percent": 5},
                         "bandwidth_limit": {"kbit": 100}, "poison_records": {"count": 3}, "fill_disk": {},
                         "s3_delay": {"ms": 50}}


def _clusters(tmp_path: Path) -> dict[str, object]:
    standalone = LocalSparkCluster(tmp_path / "spark")
    info = ClusterInfo(1, "STARTED", "ACTIVE", "3.5.0", 1)
    attached = YarnSparkCluster(AttachedYarn(tmp_path, {}, ResourceManagerApi("127.0.0.1:1"), info))
    mini = YarnSparkCluster.mini(tmp_path / "yarn")
    return {
        "standalone": standalone,
        "connect": ConnectSparkCluster(standalone, port=15002),
        "yarn-attached": attached,
        "yarn-mini": mini,
        "connect-yarn-attached": ConnectYarnSparkCluster(attached, port=15002),
        "connect-yarn-mini": ConnectMiniYarnSparkCluster(mini, port=15002),
        "k8s": K8sSparkCluster(tmp_path / "k8s"),
        "kraft": LocalKafkaCluster(tmp_path / "kafka"),
        "kafka-attached": AttachedKafka("127.0.0.1:1"),
    }


@pytest.fixture
def clusters(tmp_path: Path) -> dict[str, object]:
    return _clusters(tmp_path)


REFUSED = [
    # (fault, its arguments, Spark cluster, Kafka, the line's cluster, the capability it names, the fix's words)
    ("kill_worker", {}, "yarn-attached", "kraft", "the yarn Spark cluster (YarnSparkCluster)", "WorkerKill",
     "a cluster the plugin starts"),
    ("kill_master", {}, "yarn-attached", "kraft", "the yarn Spark cluster (YarnSparkCluster)", "MasterKill",
     "no --chaos-yarn-conf"),
    ("pause", {"target": "executor"}, "yarn-mini", "kraft", "the yarn Spark cluster (MiniYarnSparkCluster)",
     "ExecutorPause", "cannot freeze one"),
    ("pause", {"target": "worker"}, "yarn-mini", "kraft", "the yarn Spark cluster (MiniYarnSparkCluster)",
     "WorkerPause", "Spark standalone"),
    ("kill_driver", {}, "connect", "kraft", "the connect Spark cluster (ConnectSparkCluster)", "SubmittedDrivers",
     "@kill_connect_server"),
    ("kill_driver", {}, "connect-yarn-mini", "kraft", "the connect-yarn Spark cluster (ConnectMiniYarnSparkCluster)",
     "SubmittedDrivers", "@kill_connect_server"),
    ("pause", {"target": "executor"}, "connect-yarn-mini", "kraft",
     "the connect-yarn Spark cluster (ConnectMiniYarnSparkCluster)", "ExecutorPause", "cannot freeze one"),
    ("kill_worker", {}, "connect-yarn-attached", "kraft", "the connect-yarn Spark cluster (ConnectYarnSparkCluster)",
     "WorkerKill", "a cluster the plugin starts"),
    ("kill_connect_server", {}, "yarn-mini", "kraft", "the yarn Spark cluster (MiniYarnSparkCluster)",
     "ConnectServer", "spark='connect-yarn'"),
    ("kill_connect_server", {}, "standalone", "kraft", "the standalone Spark cluster (LocalSparkCluster)",
     "ConnectServer", "spark='connect'"),
    ("kill_foreachbatch_worker", {}, "yarn-mini", "kraft", "the yarn Spark cluster (MiniYarnSparkCluster)",
     "ConnectServer", "spark='connect'"),
    ("restart_resourcemanager", {}, "standalone", "kraft", "the standalone Spark cluster (LocalSparkCluster)",
     "ResourceManagerRestart", "YARN's mini cluster"),
    ("restart_resourcemanager", {}, "yarn-attached", "kraft", "the yarn Spark cluster (YarnSparkCluster)",
     "ResourceManagerRestart", "no --chaos-yarn-conf"),
    ("delete_pod", {}, "yarn-mini", "kraft", "the yarn Spark cluster (MiniYarnSparkCluster)", "PodDelete",
     "spark='k8s'"),
    ("evict_pod", {}, "standalone", "kraft", "the standalone Spark cluster (LocalSparkCluster)", "PodEvict",
     "spark='k8s'"),
    ("drain_node", {}, "yarn-attached", "kraft", "the yarn Spark cluster (YarnSparkCluster)", "NodeDrain",
     "spark='k8s'"),
    ("oom_kill_executor", {}, "connect", "kraft", "the connect Spark cluster (ConnectSparkCluster)", "ExecutorOom",
     "spark='k8s'"),
    ("network_delay", {"target": "master", "ms": 50}, "yarn-attached", "kraft",
     "the yarn Spark cluster (YarnSparkCluster)", "ActiveMaster", "a cluster the plugin starts"),
    ("kill_broker", {}, "standalone", "kafka-attached", "the attached Kafka (AttachedKafka)", "BrokerKill",
     "without --chaos-kafka-bootstrap"),
    ("isolate_broker", {}, "standalone", "kafka-attached", "the attached Kafka (AttachedKafka)", "BrokerIsolation",
     "without --chaos-kafka-bootstrap"),
    ("pause", {"target": "broker"}, "standalone", "kafka-attached", "the attached Kafka (AttachedKafka)",
     "BrokerPause", "without --chaos-kafka-bootstrap"),
    ("network_partition", {"target": "broker-1"}, "standalone", "kafka-attached",
     "the attached Kafka (AttachedKafka)", "KafkaLinks", "without --chaos-kafka-bootstrap"),
]


@pytest.mark.parametrize(("kind", "kwargs", "spark", "kafka", "where", "capability", "fix"), REFUSED,
                         ids=[f"{r[0]}-{r[1].get('target', '')}-{r[2]}-{r[3]}" for r in REFUSED])
def test_a_fault_the_cluster_cannot_serve_is_refused_when_the_run_is_planned_in_one_line(
        tmp_path, clusters, kind, kwargs, spark, kafka, where, capability, fix):
    spec = parse(kind, kwargs={"after": 5, **kwargs})
    chaos = ChaosFixture(cluster=clusters[spark], kafka=clusters[kafka], workdir=tmp_path / "runs", test_dir=tmp_path,
                  faults=[spec])
    with pytest.raises(ValueError) as refused:  # the job does not even exist: planning stops first
        chaos.run("no_such_job.py", rate=10, duration=10)
    line = str(refused.value)
    assert "\n" not in line and line.startswith(f"@{kind} cannot run on {where}: it needs {capability} (")
    assert fix in line
    assert not (tmp_path / "runs").exists() and chaos.started == 0  # nothing was made, nothing started
    assert not clusters["standalone"].processes()


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_fault_has_what_it_needs_on_the_stacks_own_clusters(clusters, kind):
    spec = parse(kind, kwargs={"after": 5, **ARGS.get(kind, {})})
    if spec.kind.startswith(("kill_connect", "kill_client", "kill_foreachbatch")):
        spark = clusters["connect"]
    elif spec.kind == "restart_resourcemanager":
        spark = clusters["yarn-mini"]
    elif spec.kind in ("delete_pod", "evict_pod", "drain_node", "oom_kill_executor", "delete_driver_pod"):
        spark = clusters["k8s"]
    else:
        spark = clusters["standalone"]
    kafka = clusters["kraft"]  # (what Kafka as it is refuses -- ACLs, too few brokers: test_topic_checkpoint_kinds)
    lacking = [c.__name__ for c in kind_of(spec).capabilities(spec)
               if not isinstance(kafka if capabilities.NEEDS[c].kafka else spark, c)]
    assert not lacking


def test_what_an_attached_yarn_still_serves(clusters):
    """Its RM's API kills an executor's container; the driver is the job's own spark-submit."""
    for kind in ("kill_executor", "kill_driver", "pause"):
        spec = parse(kind, kwargs={"after": 5, **({"target": "driver"} if kind == "pause" else {})})
        assert refused_by_stack(spec, clusters["yarn-attached"], clusters["kafka-attached"]) is None  # type: ignore[arg-type]


@pytest.mark.parametrize(("connect", "inner"), [("connect", "standalone"), ("connect-yarn-mini", "yarn-mini"),
                                                ("connect-yarn-attached", "yarn-attached")])
def test_a_cluster_under_connect_serves_what_its_own_does_but_submitted_drivers(clusters, connect, inner):
    """Connect forwards each capability its inner cluster has, and only those: the job's script is a client, so
    never SubmittedDrivers; the Connect faults' ConnectServer on top."""
    def serves(cluster: object) -> set[type]:
        return {c for c, need in capabilities.NEEDS.items() if not need.kafka and isinstance(cluster, c)}

    expected = (serves(clusters[inner]) - {capabilities.SubmittedDrivers}) | {capabilities.ConnectServer}
    assert serves(clusters[connect]) == expected


# -- Kubernetes' network faults: only the Toxiproxy toxics on the job's Kafka links reach the pods' traffic ------------

#: each network kind's smallest arguments
NET = {"network_delay": {"ms": 50}, "packet_loss": {"percent": 5}, "network_partition": {},
       "bandwidth_limit": {"kbit": 100}}
#: what the host's rules are on Kubernetes: the driver over the bridge, no master, the kubelet as the worker, no
#: ZooKeeper; a loss on the Kafka links is iptables on the proxies' ports, which the relay's connections cross unmarked
K8S_REFUSED = [(k, t) for k in NET for t in ("driver", "master", "worker-0", "zookeeper")] + [
    ("packet_loss", "kafka"), ("packet_loss", "broker-0")]
K8S_LINE = (
    "@{kind} cannot run on the k8s Spark cluster (K8sSparkCluster): it needs HostLinks (this host's network rules on "
    "the job's links (iptables and tc on the loopback, or in the job's containers' namespaces); Kubernetes' pods reach "
    "the driver over the cluster's bridge, which those rules never see, and the job's Kafka through the host's relay, "
    "whose connections are not the job's; its worker is the node's kubelet and it has no master), which that cluster "
    "lacks; fix: on Kubernetes fault the job's Kafka links through Toxiproxy: network_delay, network_partition or "
    "bandwidth_limit with target='kafka' or 'broker-<i>' (packet_loss is iptables there too); or run the test on "
    "Spark standalone (spark='standalone')")


@pytest.mark.parametrize("mode", ["client", "cluster"])
@pytest.mark.parametrize(("kind", "target"), K8S_REFUSED, ids=[f"{k}-{t}" for k, t in K8S_REFUSED])
def test_a_network_fault_whose_rule_never_sees_the_pods_traffic_is_refused_on_k8s_when_planned(
        tmp_path, clusters, kind, target, mode):
    from pytest_streamchaos import JobSetup

    spec = parse(kind, kwargs={"after": 5, "target": target, **NET[kind]})
    chaos = ChaosFixture(cluster=clusters["k8s"], kafka=clusters["kraft"], workdir=tmp_path / "runs",
                         test_dir=tmp_path, faults=[spec])
    with pytest.raises(ValueError) as refused:  # in either deploy mode: the pods' links are the bridge's
        chaos.run("no_such_job.py", rate=10, duration=10, setup=JobSetup(deploy_mode=mode))
    assert str(refused.value) == K8S_LINE.format(kind=kind)
    assert not (tmp_path / "runs").exists() and chaos.started == 0


K8S_ALLOWED = [(k, t) for k in ("network_delay", "network_partition", "bandwidth_limit") for t in ("kafka", "broker-0")]


@pytest.mark.parametrize("mode", ["client", "cluster"])
@pytest.mark.parametrize(("kind", "target"), K8S_ALLOWED, ids=[f"{k}-{t}" for k, t in K8S_ALLOWED])
def test_a_toxic_on_the_jobs_kafka_links_is_planned_on_k8s(tmp_path, clusters, kind, target, mode):
    """Toxiproxy's proxies carry the relay's connections too: the planning lets these through (the job is then
    looked for: the error is the missing script's, not the fault's)."""
    from pytest_streamchaos import JobSetup
    from pytest_streamchaos.runner.errors import RunError

    spec = parse(kind, kwargs={"after": 5, "target": target, **NET[kind]})
    assert refused_by_stack(spec, clusters["k8s"], clusters["kraft"]) is None  # type: ignore[arg-type]
    chaos = ChaosFixture(cluster=clusters["k8s"], kafka=clusters["kraft"], workdir=tmp_path / "runs",
                         test_dir=tmp_path, faults=[spec])
    with pytest.raises(RunError, match="job script 'no_such_job.py' not found"):
        chaos.run("no_such_job.py", rate=10, duration=10, setup=JobSetup(deploy_mode=mode))


@pytest.mark.parametrize("spark", ["standalone", "yarn-mini", "connect"])
@pytest.mark.parametrize("target", ["driver", "worker-0", "kafka"])
@pytest.mark.parametrize("kind", sorted(NET))
def test_the_host_rules_network_faults_stay_planned_where_the_host_sees_the_links(clusters, kind, target, spark):
    spec = parse(kind, kwargs={"after": 5, "target": target, **NET[kind]})
    assert refused_by_stack(spec, clusters[spark], clusters["kraft"]) is None  # type: ignore[arg-type]


def test_a_kafka_link_without_toxiproxy_on_k8s_fails_at_injection_not_silently(tmp_path):
    """Toxiproxy could not be had (no proxies): the fault would be iptables on the brokers' ports, which the relay's
    connections cross unmarked; it fails naming why instead of reporting a fault the pods never met."""
    from pytest_streamchaos.faults.context import FaultContext
    from pytest_streamchaos.faults.families.network import NetworkPartition
    from pytest_streamchaos.faults.timeline import plan
    from pytest_streamchaos.netem.rules import NetFaultError
    from pytest_streamchaos.stack.base import Endpoint

    class NoProxies:  # the KafkaLinks of a stack without Toxiproxy
        broker_ids = [0]

        def job_links(self, broker_ids: list[int] | None = None) -> list[object]:
            return []

        def endpoints(self) -> list[Endpoint]:
            return [Endpoint("broker-0", "broker", "127.0.0.1", {"kafka": 9092})]

    ctx = FaultContext(cluster=K8sSparkCluster(tmp_path / "k8s"), kafka=NoProxies(), job=None,  # type: ignore[arg-type]
                       input_topic="in")
    planned = plan([parse("network_partition", kwargs={"after": 5, "target": "kafka"})])[0]
    with pytest.raises(NetFaultError, match=r"^@network_partition\(target='kafka'\) without Toxiproxy cannot run on "
                                            r"the k8s Spark cluster \(K8sSparkCluster\): it needs HostLinks"):
        NetworkPartition(ctx).build(planned)
