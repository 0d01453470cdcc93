"""The faults and the runner use the stack only through the interface of stack/base.py and the capabilities of
stack/capabilities.py, so a backend plugs in by implementing them: every operation they call on the cluster, the
brokers or the job is declared there, a cluster class has exactly the capabilities it can serve (none raises "not
supported here" at run time), and the faults send no signal to a process themselves. The local and docker
backends share the clusters and differ only in their placement (stack/placement.py)."""

import re
from pathlib import Path

import pytest

from pytest_streamchaos.stack import capabilities as caps
from pytest_streamchaos.stack.base import ConnectSession, KafkaCluster, SparkCluster
from pytest_streamchaos.stack.connect.cluster import ConnectSparkCluster
from pytest_streamchaos.stack.connect.yarn import ConnectMiniYarnSparkCluster, ConnectYarnSparkCluster
from pytest_streamchaos.stack.docker.kafka import DockerKafkaCluster
from pytest_streamchaos.stack.docker.spark import DockerSparkCluster
from pytest_streamchaos.stack.kraft.attached import AttachedKafka
from pytest_streamchaos.stack.kraft.cluster import KRaftCluster
from pytest_streamchaos.stack.local import LocalKafkaCluster, LocalSparkCluster
from pytest_streamchaos.stack.standalone.cluster import StandaloneCluster
from pytest_streamchaos.stack.yarn.spark import MiniYarnSparkCluster, YarnSparkCluster

PKG = Path(__file__).resolve().parents[2] / "pytest_streamchaos"
#: what acts on the stack: the fault families, their shared context and moments, and the runner
FAULTS = [PKG / "faults" / "context.py", PKG / "faults" / "moments.py",
          *sorted((PKG / "faults" / "families").glob("*.py"))]
USERS = [*FAULTS, *sorted((PKG / "runner").rglob("*.py"))]

SPARK_CAPS = [c for c, need in caps.NEEDS.items() if not need.kafka]
KAFKA_CAPS = [c for c, need in caps.NEEDS.items() if need.kafka]
STANDALONE = {caps.WorkerKill, caps.WorkerPause, caps.MasterKill, caps.MasterPause, caps.ActiveMaster,
              caps.ExecutorKill, caps.ExecutorPause, caps.SubmittedDrivers, caps.HostLinks}
#: who serves what: the table docs/architecture.md shows (Kubernetes' K8sSparkCluster: test_capabilities.py)
SERVES: dict[type, set[type]] = {
    StandaloneCluster: STANDALONE,
    ConnectSparkCluster: STANDALONE - {caps.SubmittedDrivers} | {caps.ConnectServer},
    YarnSparkCluster: {caps.ExecutorKill, caps.SubmittedDrivers, caps.HostLinks},  # an attached YARN: its RM's API
    MiniYarnSparkCluster: {caps.ExecutorKill, caps.SubmittedDrivers, caps.WorkerKill, caps.MasterKill,
                           caps.ActiveMaster, caps.ResourceManagerRestart, caps.HostLinks},
    ConnectYarnSparkCluster: {caps.ExecutorKill, caps.ConnectServer, caps.HostLinks},  # Connect on an attached YARN
    ConnectMiniYarnSparkCluster: {caps.ExecutorKill, caps.ConnectServer, caps.WorkerKill, caps.MasterKill,
                                  caps.ActiveMaster, caps.ResourceManagerRestart, caps.HostLinks},
    KRaftCluster: set(KAFKA_CAPS),
    AttachedKafka: {caps.TopicAdmin},  # a client's view: no broker's process, no link of the job's
}


def _members(protocol: type) -> set[str]:
    return {n for n in vars(protocol) if not n.startswith("_")}


def _has(cls: type, protocol: type) -> bool:
    """What ``isinstance`` finds on an instance, read off the class (no cluster is built)."""
    return all(hasattr(cls, n) for n in _members(protocol))


def _uses(pattern: str) -> set[str]:
    found = set()
    for path in USERS:
        found |= set(re.findall(pattern, path.read_text()))
    return found


@pytest.mark.parametrize(("pattern", "iface", "capabilities"), [
    (r"\bcluster\.(\w+)", SparkCluster, SPARK_CAPS),
    (r"\bctx\.kafka\.(\w+)|self\.kafka\.(\w+)|\bkafka\.(\w+)\(", KafkaCluster, KAFKA_CAPS),
])
def test_every_stack_operation_the_faults_use_is_declared(pattern, iface, capabilities):
    used = {n for m in _uses(pattern) for n in (m if isinstance(m, tuple) else (m,)) if n}
    declared = {n for n in dir(iface) if not n.startswith("_")} | {n for c in capabilities for n in _members(c)}
    missing = sorted(used - declared)
    assert not missing, f"declare these in stack/base.py {iface.__name__} or a capability: {missing}"


@pytest.mark.parametrize("cluster", list(SERVES), ids=lambda c: c.__name__)
def test_a_cluster_class_has_exactly_the_capabilities_it_serves(cluster):
    has = {c for c in caps.NEEDS if _has(cluster, c)}
    assert has == SERVES[cluster], f"{cluster.__name__}: has {sorted(c.__name__ for c in has)}"


@pytest.mark.parametrize(("backend", "shared"), [(LocalSparkCluster, StandaloneCluster),
                                                 (DockerSparkCluster, StandaloneCluster),
                                                 (LocalKafkaCluster, KRaftCluster),
                                                 (DockerKafkaCluster, KRaftCluster)])
def test_a_backend_adds_a_placement_not_cluster_logic(backend, shared):
    """A backend's cluster is the shared one on its placement: construction, and the docker backend's
    container names for debugging, nothing else (so both serve what the shared cluster serves)."""
    assert issubclass(backend, shared)
    own = {n for n, v in vars(backend).items() if callable(v) or isinstance(v, (property, classmethod))}
    assert own <= {"__init__", "from_settings", "containers"}, sorted(own)


def test_every_operation_on_the_job_is_in_its_handle():
    """... or in its Connect session's (``ConnectSession``, a ``JobHandle``: what the Connect faults use), or in a
    job capability of stack/capabilities.py (``JOB_CAPS``: what only some deployments' jobs serve)."""
    used = _uses(r"\bjob\.(\w+)\b(?!\.py)") - {"PreparedJob", "config", "eos", "kafka_sink"}  # module paths
    declared = {n for n in dir(ConnectSession) if not n.startswith("_")} | {n for c in caps.JOB_CAPS
                                                                           for n in _members(c)}
    assert not sorted(used - declared), f"declare these in stack/base.py JobHandle: {sorted(used - declared)}"


def test_the_faults_send_no_signal_themselves():
    for path in FAULTS:
        text = path.read_text()
        assert "os.kill(" not in text and "psutil" not in text, f"{path.name}: signal through the stack (stack/base.py)"


def test_no_stack_method_is_a_stub_that_fails_at_run_time():
    """A missing operation is a missing capability, refused when the run is planned; and no fault or runner
    code asks which cluster manager it runs on."""
    stubs = [f"{p.relative_to(PKG)}:{n}" for p in sorted((PKG / "stack").rglob("*.py"))
             for n, line in enumerate(p.read_text().splitlines(), 1) if "raise NotImplementedError" in line]
    assert not stubs, stubs
    named = [f"{p.relative_to(PKG)}:{n}: {line.strip()}" for p in USERS
             for n, line in enumerate(p.read_text().splitlines(), 1)
             if re.search(r"(master_url|manager)\s*[!=]=\s*['\"]|host_access", line)]
    assert not named, "ask for a capability (stack/capabilities.py), not for a cluster manager:\n" + "\n".join(named)
