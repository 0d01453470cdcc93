"""machine/commands.py: the one way a host command runs; a failure names the command, why and the fix."""

import subprocess
import sys

import psutil
import pytest

from pytest_streamchaos.machine import commands
from pytest_streamchaos.poll import wait_for
from pytest_streamchaos.stack.standalone.executors import EXECUTOR_CLASS, executors_under


class Custom(RuntimeError):
    pass


def test_run_returns_stdout():
    assert commands.run([sys.executable, "-c", "print('hi')"]) == "hi\n"


def test_a_failure_names_the_command_its_exit_its_stderr_and_the_fix():
    argv = [sys.executable, "-c", "import sys; sys.exit('boom')"]
    with pytest.raises(Custom, match=r"`.*sys.exit\('boom'\)` failed \(exit 1\): boom - do this"):
        commands.run(argv, fix="do this", error=Custom)


def test_completed_leaves_the_exit_code_to_the_caller():
    p = commands.completed([sys.executable, "-c", "import sys; sys.exit(3)"])
    assert p.returncode == 3


def test_a_command_that_cannot_start_or_hangs_is_an_error_naming_it():
    with pytest.raises(commands.CommandError, match="`no-such-program-xyz --flag` could not start"):
        commands.completed(["no-such-program-xyz", "--flag"])
    with pytest.raises(commands.CommandError, match=r"did not finish within 0.2s - kill it"):
        commands.completed([sys.executable, "-c", "import time; time.sleep(30)"], timeout=0.2, fix="kill it")
    with pytest.raises(Custom, match="no `no-such-program-xyz` on PATH: install it"):
        commands.need("no-such-program-xyz", "install it", Custom)


def test_net_admin_is_read_from_the_effective_capabilities():
    assert commands.has_net_admin("Name:\tx\nCapEff:\t0000000000001000\n")
    assert not commands.has_net_admin("Name:\tx\nCapEff:\t0000000000000000\n")


def test_executors_are_found_in_their_workers_process_tree_only():
    """A worker's executors are found among its descendants, by application; an executor-looking process
    that is not the worker's is not (no scan of the host)."""
    fake_worker = ("import subprocess, sys, time\n"
                   f"c = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)', {EXECUTOR_CLASS!r},"
                   " '--app-id', 'app-7'])\n"
                   "print(c.pid, flush=True)\ntime.sleep(60)\n")
    worker = subprocess.Popen([sys.executable, "-c", fake_worker], stdout=subprocess.PIPE, text=True)
    stranger = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", EXECUTOR_CLASS, "--app-id",
                                 "app-7"])
    try:
        child = int(worker.stdout.readline())
        # right after fork the child may not have exec'd yet (its command line is still its parent's)
        wait_for(lambda: EXECUTOR_CLASS in psutil.Process(child).cmdline(), 10,
                 "the fake executor's command line", last=lambda: psutil.Process(child).cmdline())
        assert [e.pid for e in executors_under(worker.pid, "app-7")] == [child]
        assert [e.pid for e in executors_under(worker.pid)] == [child]
        assert executors_under(worker.pid, "app-8") == []
        assert stranger.pid not in [e.pid for e in executors_under(worker.pid)]
    finally:
        for p in (worker, stranger):
            p.kill()
            p.wait()
        if psutil.pid_exists(child):
            psutil.Process(child).kill()
