"""The faults and the runner use the stack only through the interface of stack/base.py, so a backend
plugs in by implementing it: every operation they call on the cluster, the brokers or the job is declared
there, and they send no signal to a process themselves. The local and docker backends share the
clusters and differ only in their placement (stack/placement.py)."""

import re
from pathlib import Path

import pytest

from pytest_streamchaos.stack.base import ConnectSession, KafkaCluster, SparkCluster
from pytest_streamchaos.stack.docker.kafka import DockerKafkaCluster
from pytest_streamchaos.stack.docker.spark import DockerSparkCluster
from pytest_streamchaos.stack.kraft.cluster import KRaftCluster
from pytest_streamchaos.stack.local import LocalKafkaCluster, LocalSparkCluster
from pytest_streamchaos.stack.standalone.cluster import StandaloneCluster

PKG = Path(__file__).resolve().parents[2] / "pytest_streamchaos"
#: what acts on the stack: the fault families, their shared context and moments, and the runner
FAULTS = [PKG / "faults" / "context.py", PKG / "faults" / "moments.py",
          *sorted((PKG / "faults" / "families").glob("*.py"))]
USERS = [*FAULTS, *sorted((PKG / "runner").rglob("*.py"))]


def _uses(pattern: str) -> set[str]:
    found = set()
    for path in USERS:
        found |= set(re.findall(pattern, path.read_text()))
    return found


@pytest.mark.parametrize(("pattern", "iface"), [
    (r"\bcluster\.(\w+)", SparkCluster),
    (r"\bctx\.kafka\.(\w+)|self\.kafka\.(\w+)|\bkafka\.(\w+)\(", KafkaCluster),
])
def test_every_stack_operation_the_faults_use_is_in_the_interface(pattern, iface):
    used = {n for m in _uses(pattern) for n in (m if isinstance(m, tuple) else (m,)) if n}
    missing = sorted(n for n in used if not hasattr(iface, n) and n not in iface.__annotations__)
    assert not missing, f"declare these in stack/base.py {iface.__name__}: {missing}"


@pytest.mark.parametrize(("local", "iface"), [(LocalSparkCluster, SparkCluster), (LocalKafkaCluster, KafkaCluster),
                                              (DockerSparkCluster, SparkCluster), (DockerKafkaCluster, KafkaCluster)])
def test_the_local_backend_implements_the_whole_interface(local, iface):
    declared = {n for n, v in vars(iface).items() if callable(v) and not n.startswith("_")}
    not_overridden = sorted(n for n in declared if getattr(local, n) is getattr(iface, n))
    assert not not_overridden, f"{local.__name__} lacks {not_overridden}"


def test_every_operation_on_the_job_is_in_its_handle():
    """... or in its Connect session's (``ConnectSession``, a ``JobHandle``: what the Connect faults use)."""
    used = _uses(r"\bjob\.(\w+)\b(?!\.py)") - {"PreparedJob", "config", "eos", "kafka_sink"}  # module paths
    declared = {n for n in dir(ConnectSession) if not n.startswith("_")}
    assert not sorted(used - declared), f"declare these in stack/base.py JobHandle: {sorted(used - declared)}"


@pytest.mark.parametrize(("backend", "shared"), [(LocalSparkCluster, StandaloneCluster),
                                                 (DockerSparkCluster, StandaloneCluster),
                                                 (LocalKafkaCluster, KRaftCluster),
                                                 (DockerKafkaCluster, KRaftCluster)])
def test_a_backend_adds_a_placement_not_cluster_logic(backend, shared):
    """A backend's cluster is the shared one on its placement: construction, and the docker backend's
    container names for debugging, nothing else."""
    assert issubclass(backend, shared)
    own = {n for n, v in vars(backend).items() if callable(v) or isinstance(v, (property, classmethod))}
    assert own <= {"__init__", "from_settings", "containers"}, sorted(own)


def test_the_faults_send_no_signal_themselves():
    for path in FAULTS:
        text = path.read_text()
        assert "os.kill(" not in text and "psutil" not in text, f"{path.name}: signal through the stack (stack/base.py)"


def test_a_backend_lacking_an_operation_fails_naming_it():
    class Bare(SparkCluster):
        workers = masters = []

        def wait_for_workers(self, k, timeout=60.0):
            pass

        def heal(self, timeout=60.0):
            pass

        def stop(self):
            pass

    with pytest.raises(NotImplementedError, match=r"Bare backend does not implement kill_worker\(\)"):
        Bare().kill_worker(0)
