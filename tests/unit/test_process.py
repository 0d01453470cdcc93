"""ManagedProcess with real tiny processes: group signals, pause/resume, logs, reaper registration."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import psutil
import pytest

from pytest_streamchaos.stack.process import ManagedProcess
from pytest_streamchaos.testing import wait_for

# A parent that spawns a grandchild (same group), prints both pids, and sleeps.
PARENT_WITH_CHILD = (
    "import subprocess, sys, time\n"
    "c = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
    "print('pids', c.pid, flush=True)\n"
    "time.sleep(600)\n"
)


def group_members(pgid: int) -> list[int]:
    """Every live process of group ``pgid`` on the host (the test's own check; the stack does not scan)."""
    members = []
    for p in psutil.process_iter(["status"]):
        try:
            if p.info["status"] != psutil.STATUS_ZOMBIE and os.getpgid(p.pid) == pgid:
                members.append(p.pid)
        except (ProcessLookupError, psutil.Error, OSError):
            continue
    return members


def _env() -> dict[str, str]:
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}




def _child_pid(proc: ManagedProcess) -> int:
    line = wait_for(lambda: [ln for ln in proc.tail_log().splitlines() if ln.startswith("pids ")],
                     10, "the child pid line in the log")
    return int(line[0].split()[1])


@pytest.fixture
def started(tmp_path):
    procs: list[ManagedProcess] = []

    def start(argv, **kw):
        p = ManagedProcess(argv, env=_env(), log_path=tmp_path / f"p{len(procs)}.log", **kw)
        procs.append(p)
        return p

    yield start
    for p in procs:
        p.kill()


def test_own_group_and_log(started):
    p = started([sys.executable, "-c", "import sys; print('hello', flush=True); print('err', file=sys.stderr)"])
    assert p.pgid == p.pid
    assert p.wait(10) == 0
    log = p.tail_log()
    assert "hello" in log and "err" in log
    assert p.tail_log(1) == "err"
    assert not p.alive


def test_env_is_explicit(started):
    p = started([sys.executable, "-c", "import os; print('V=' + os.environ.get('SC_TEST_VAR', 'unset'))"])
    os.environ["SC_TEST_VAR_OUTER"] = "x"
    p.wait(10)
    assert "V=unset" in p.tail_log()
    q = ManagedProcess([sys.executable, "-c", "import os; print('V=' + os.environ['SC_TEST_VAR'])"],
                       env={**_env(), "SC_TEST_VAR": "42"}, log_path=p.log_path.with_name("q.log"))
    assert q.wait(10) == 0 and "V=42" in q.tail_log()
    q.kill()


def test_kill_kills_the_whole_group(started):
    p = started([sys.executable, "-c", PARENT_WITH_CHILD])
    child = _child_pid(p)
    assert os.getpgid(child) == p.pgid
    assert sorted(p.members()) == sorted([p.pid, child])
    p.kill()
    assert not p.alive and p.returncode == -signal.SIGKILL
    assert not psutil.pid_exists(child) or psutil.Process(child).status() == psutil.STATUS_ZOMBIE
    assert group_members(p.pgid) == []


def test_terminate_escalates_to_sigkill(started):
    stubborn = ("import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
                "print('ready', flush=True)\ntime.sleep(600)\n")
    p = started([sys.executable, "-c", stubborn])
    wait_for(lambda: "ready" in p.tail_log().splitlines(), 10, "the child to ignore SIGTERM")
    t0 = time.monotonic()
    p.terminate(timeout=0.5)
    assert not p.alive and p.returncode == -signal.SIGKILL
    assert time.monotonic() - t0 < 5


def test_terminate_graceful(started):
    p = started(["sleep", "600"])
    p.terminate(timeout=5)
    assert p.returncode == -signal.SIGTERM
    p.terminate()  # idempotent


def test_pause_and_resume_whole_group(started):
    p = started([sys.executable, "-c", PARENT_WITH_CHILD])
    child = _child_pid(p)
    p.pause()
    wait_for(lambda: all(psutil.Process(x).status() == psutil.STATUS_STOPPED for x in (p.pid, child)),
              5, "both group members stopped")
    assert p.alive and p.paused
    p.resume()
    wait_for(lambda: all(psutil.Process(x).status() != psutil.STATUS_STOPPED for x in (p.pid, child)),
              5, "both group members running again")
    assert not p.paused


def test_terminate_a_paused_group(started):
    p = started(["sleep", "600"])
    p.pause()
    p.terminate(timeout=5)
    assert p.returncode == -signal.SIGTERM


def test_wait_timeout(started):
    p = started(["sleep", "600"])
    with pytest.raises(subprocess.TimeoutExpired):
        p.wait(0.1)


def test_bad_command_names_it(tmp_path):
    with pytest.raises(OSError, match="no-such-binary"):
        ManagedProcess(["/nonexistent/no-such-binary"], env=_env(), log_path=tmp_path / "x.log")


def test_members_keep_a_child_whose_parent_exited(started, tmp_path):
    """A member re-parented away from the leader's tree (its parent exited) is still one of the group's
    members, found without a scan of the host, and a group kill leaves nothing behind."""
    go = tmp_path / "exit-now"
    leader = ("import os, subprocess, sys, time\n"
              "c = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
              "print('pids', c.pid, flush=True)\n"
              f"while not os.path.exists({str(go)!r}): time.sleep(0.05)\n")
    p = started([sys.executable, "-c", leader])
    child = _child_pid(p)
    assert sorted(p.members()) == sorted([p.pid, child])  # seen while its parent lives
    go.touch()
    p.wait(10)
    assert psutil.Process(child).ppid() != p.pid  # re-parented: no longer in the leader's tree
    assert p.members() == [child]
    p.kill()
    assert group_members(p.pgid) == []
