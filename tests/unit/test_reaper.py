"""The reaper watchdog: a pytest-like parent that is SIGKILLed leaves nothing behind."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

from pytest_streamchaos.stack.host import Host
from pytest_streamchaos.testing import pid_alive, wait_for

# The "parent": starts process groups through ManagedProcess (which registers them), one paused,
# one unregistered-then-stopped, registers a cleanup command and a path, prints what it did, hangs.
PARENT = r"""
import json, os, sys, time
from pytest_streamchaos.stack.process import ManagedProcess
from pytest_streamchaos.stack.host import current
work = sys.argv[1]
env = {"PATH": os.environ["PATH"]}
child = ("import subprocess, sys, time; "
         "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)']); time.sleep(600)")
procs = [ManagedProcess([sys.executable, "-c", child], env=env, log_path=f"{work}/p{i}.log") for i in range(3)]
r = current().reaper
r.register_command("marker", [sys.executable, "-c", f"open({work!r} + '/cleanup-ran', 'w').write('yes')"])
r.register_command("dropped", [sys.executable, "-c", f"open({work!r} + '/dropped-ran', 'w').write('yes')"])
r.unregister_command("dropped")
os.makedirs(f"{work}/scratch/sub")
open(f"{work}/scratch/sub/f", "w").write("x")
r.register_path(f"{work}/scratch")
os.makedirs(f"{work}/keep")
r.register_path(f"{work}/keep")
r.unregister_path(f"{work}/keep")
deadline = time.time() + 60  # each child starts a python of its own: up to ~20 s on 2 busy cores
while any(len(p.members()) < 2 for p in procs) and time.time() < deadline:
    time.sleep(0.05)
procs[1].pause()  # a paused group must die too
print(json.dumps({"pgids": [p.pgid for p in procs], "members": [p.members() for p in procs],
                  "reaper": r.pid}), flush=True)
time.sleep(600)
"""






def test_sigkilled_parent_leaves_nothing(tmp_path):
    parent = subprocess.Popen([sys.executable, "-c", PARENT, str(tmp_path)], stdout=subprocess.PIPE,
                              text=True, start_new_session=True)
    try:
        info = json.loads(parent.stdout.readline())
        members = [pid for group in info["members"] for pid in group]
        assert len(members) == 6, info
        assert all(pid_alive(pid) for pid in members)
        assert (tmp_path / "scratch").exists()
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait(10)
        # deadlines, not timings: on 2 cores busy with a Spark job the watchdog's python (and the cleanup
        # command it starts) took up to 19 s to get through here, so each wait allows 60 s
        wait_for(lambda: not any(pid_alive(pid) for pid in members), 60, "every registered group to die")
        wait_for(lambda: (tmp_path / "cleanup-ran").exists(), 60, "the registered cleanup command")
        wait_for(lambda: not (tmp_path / "scratch").exists(), 60, "the registered path to be removed")
        wait_for(lambda: not pid_alive(info["reaper"]), 60, "the watchdog to exit")
        assert not (tmp_path / "dropped-ran").exists()
        assert (tmp_path / "keep").exists()
    finally:
        if parent.poll() is None:
            os.killpg(parent.pid, signal.SIGKILL)
            parent.wait()


def test_close_runs_nothing(tmp_path):
    host = Host()
    r = host.reaper
    marker = tmp_path / "ran"
    r.register_command("m", [sys.executable, "-c", f"open({str(marker)!r}, 'w')"])
    (tmp_path / "d").mkdir()
    r.register_path(tmp_path / "d")
    pid = r.pid
    r.close()
    assert not pid_alive(pid)
    assert not marker.exists() and (tmp_path / "d").exists()
    r2 = host.reaper  # a fresh one after close
    assert r2 is not r and r2.alive
    r2.unregister_command("m")
    r2.close()


def test_one_per_host_and_pid_reuse_guard(tmp_path):
    host = Host()
    r = host.reaper
    assert host.reaper is r
    # A pgid whose leader start time does not match must be left alone: simulate by registering our
    # own (alive) process with a wrong start time through the raw protocol, then ending the watchdog.
    victim = subprocess.Popen(["sleep", "600"], start_new_session=True)
    try:
        r._send({"op": "pgid+", "pgid": victim.pid, "start": 1})  # wrong start time => reused number
        watchdog = r._proc
        r._proc.stdin.close()  # EOF without "close" => the watchdog reaps
        watchdog.wait(10)
        assert victim.poll() is None, "the watchdog killed a group whose leader start time differs"
    finally:
        victim.kill()
        victim.wait()


def test_a_cleanup_command_gets_its_own_time_limit(tmp_path):
    """A command registered with ``timeout`` is killed after it (not the default 15 s), and the next still runs:
    a cluster's clean-up registers a longer one (stack/k8s/cleanup.py's WORST_CASE_S)."""
    host = Host()
    r = host.reaper
    late, nxt = tmp_path / "late", tmp_path / "next"
    r.register_command("slow", [sys.executable, "-c", f"import time; time.sleep(5); open({str(late)!r}, 'w')"],
                       timeout=0.5)
    r.register_command("next", [sys.executable, "-c", f"open({str(nxt)!r}, 'w')"])
    watchdog = r._proc
    r._proc.stdin.close()  # EOF without "close" => the watchdog reaps
    watchdog.wait(60)
    assert nxt.exists(), "the command after the one killed at its limit ran"
    assert not late.exists(), "the slow command was killed at its 0.5 s limit"
