"""Outside stack/ and machine/, nothing signals a process, scans the file system with glob or reads /proc:
that is the stack's business (issue 25, "the stack interface is the only door"), and the machine's, whose
set-up globs the jars it fetched and reads this process's capabilities and the port range, but signals no
process. Host commands go through machine/commands.py and nothing scans the host's processes (issue 30)."""

import ast
import re
from pathlib import Path

PKG = Path(__file__).resolve().parents[2] / "pytest_streamchaos"
#: ``os.kill``, a ``glob`` (module or ``Path.glob``; not the word ``global``), a ``/proc`` path
DOOR = re.compile(r"os\.kill|\.glob\(|\bglob\b|/proc")


def test_only_the_stack_touches_processes_and_proc():
    hits = [f"{path.relative_to(PKG.parent)}:{n}: {line.strip()}"
            for path in sorted(PKG.rglob("*.py")) if path.relative_to(PKG).parts[0] not in ("stack", "machine")
            for n, line in enumerate(path.read_text().splitlines(), 1) if DOOR.search(line)]
    assert not hits, "move these into pytest_streamchaos/stack/:\n" + "\n".join(hits)


def test_the_machine_signals_no_process_and_reads_only_its_own_proc():
    """machine/ sets the machine up: no signal, and of /proc only this process's status and the port range."""
    own = ("/proc/self/status", "/proc/sys/net/ipv4/ip_local_port_range")
    hits = [f"{path.relative_to(PKG.parent)}:{n}: {line.strip()}"
            for path in sorted((PKG / "machine").rglob("*.py"))
            for n, line in enumerate(path.read_text().splitlines(), 1)
            if "os.kill" in line or ("/proc" in line and not any(p in line for p in own))]
    assert not hits, "move these into pytest_streamchaos/stack/:\n" + "\n".join(hits)


#: what of stack/ the faults may import: the interface and its capabilities, the session's host, and a backend's
#: timeline kinds (its package's face, :func:`_kinds_face`); how the host's network is broken is netem/'s (the
#: command runner is the machine's, below the stack)
FAULTS_MAY_IMPORT = {"pytest_streamchaos.stack.base", "pytest_streamchaos.stack.capabilities",
                     "pytest_streamchaos.stack.host"}
#: what of stack/ netem/ (the network's breaking) may import: the interface, the iptables wrapper, the
#: helper-process class (the NFQUEUE delayer is one), the session's host (its reaper and the host-wide rule
#: managers), and the error the Toxiproxy API raises
NETEM_MAY_IMPORT = {"pytest_streamchaos.stack.base",
                    "pytest_streamchaos.stack.host", "pytest_streamchaos.stack.netfilter",
                    "pytest_streamchaos.stack.process", "pytest_streamchaos.stack.reaper",
                    "pytest_streamchaos.stack.toxiproxy"}


def _stack_imports(room: str) -> dict[str, list[str]]:
    used: dict[str, list[str]] = {}
    for path in sorted((PKG / room).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("pytest_streamchaos.stack"):
                names = [node.module] if node.module != "pytest_streamchaos.stack" else \
                    [f"{node.module}.{a.name}" for a in node.names]
                for name in names:
                    used.setdefault(name, []).append(str(path.relative_to(PKG / room)))
    return used


def _kinds_face(module: str) -> bool:
    """Whether ``module`` is a backend's package face that holds only its timeline kinds (``stack/hdfs``'s
    ``HdfsKind``): it imports nothing of the package but the timeline's vocabulary, so a fault family that records
    them reaches nothing of the backend's machinery through it."""
    init = PKG.parent / module.replace(".", "/") / "__init__.py"
    if not init.is_file():
        return False
    imported = {n.module for n in ast.walk(ast.parse(init.read_text())) if isinstance(n, ast.ImportFrom)}
    return all(m in ("__future__", "pytest_streamchaos.events") for m in imported)


def test_the_faults_reach_the_stack_only_through_its_interface():
    extra = {m: files for m, files in _stack_imports("faults").items()
             if m not in FAULTS_MAY_IMPORT and not _kinds_face(m)}
    assert not extra, f"the faults use the stack beyond its interface (stack/base.py): {extra}"


def test_the_network_machinery_uses_only_the_stacks_helpers():
    extra = {m: files for m, files in _stack_imports("netem").items() if m not in NETEM_MAY_IMPORT}
    assert not extra, f"netem/ uses the stack beyond its helpers: {extra}"


#: the modules that may start a subprocess themselves: the command runner, the managed process, the
#: reaper (its watchdog cannot be a managed process: a managed process registers with it), and the Kubernetes
#: cluster's clean-up, which the reaper runs as a standard-library script (``python -I``) once pytest is dead
SPAWNERS = {"machine/commands.py", "stack/process.py", "stack/reaper.py", "stack/k8s/cleanup.py"}


def test_host_commands_go_through_the_command_runner():
    spawn = re.compile(r"subprocess\.(run|Popen|call|check_call|check_output)\(")
    hits = [f"{path.relative_to(PKG)}:{n}: {line.strip()}"
            for path in sorted(PKG.rglob("*.py")) if path.relative_to(PKG).as_posix() not in SPAWNERS
            for n, line in enumerate(path.read_text().splitlines(), 1) if spawn.search(line)]
    assert not hits, "run these through machine/commands.py (a long-lived one: stack/process.py):\n" + "\n".join(hits)


def test_nothing_scans_the_hosts_processes():
    """A process group's members and a job's executors are found from the stack's own process trees."""
    hits = [f"{path.relative_to(PKG)}:{n}: {line.strip()}"
            for path in sorted(PKG.rglob("*.py"))
            for n, line in enumerate(path.read_text().splitlines(), 1) if "process_iter" in line]
    assert not hits, "no scan of every process on the host:\n" + "\n".join(hits)
