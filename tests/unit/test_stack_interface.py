"""The faults and the runner use the stack only through the interface of stack/base.py, so a second
backend (containers) plugs in by implementing it: every operation they call on the cluster or the
brokers is declared there, and they send no signal to a process themselves."""

import re
from pathlib import Path

import pytest

from pytest_streamchaos.stack.base import KafkaCluster, SparkCluster
from pytest_streamchaos.stack.local import LocalKafkaCluster, LocalSparkCluster

PKG = Path(__file__).resolve().parents[2] / "pytest_streamchaos"
USERS = [PKG / "faults" / "actions.py", *sorted((PKG / "runner").rglob("*.py"))]


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


@pytest.mark.parametrize(("local", "iface"), [(LocalSparkCluster, SparkCluster), (LocalKafkaCluster, KafkaCluster)])
def test_the_local_backend_implements_the_whole_interface(local, iface):
    declared = {n for n, v in vars(iface).items() if callable(v) and not n.startswith("_")}
    not_overridden = sorted(n for n in declared if getattr(local, n) is getattr(iface, n))
    assert not not_overridden, f"{local.__name__} lacks {not_overridden}"


def test_the_faults_send_no_signal_themselves():
    text = (PKG / "faults" / "actions.py").read_text()
    assert "os.kill(" not in text and "psutil" not in text, "signal through the stack (stack/base.py)"


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
