"""stack/commands.py: the one way a host command runs; a failure names the command, why and the fix."""

import subprocess
import sys

import psutil
import pytest

from pytest_streamchaos.poll import wait_for
from pytest_streamchaos.spark import launcher
from pytest_streamchaos.stack import commands
from pytest_streamchaos.stack.spark_daemons import EXECUTOR_CLASS


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


def test_executors_are_found_among_the_given_processes():
    """SparkJob.executor_pids looks among the job group's members before the whole host."""
    fake = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", EXECUTOR_CLASS, "app-7"])
    try:
        # right after fork the child may not have exec'd yet (its command line is still pytest's)
        wait_for(lambda: EXECUTOR_CLASS in psutil.Process(fake.pid).cmdline(), 10,
                 "the fake executor's command line", last=lambda: psutil.Process(fake.pid).cmdline())
        assert launcher._executors_of("app-7", launcher._processes([fake.pid, 2 ** 22 + 1])) == [fake.pid]
        assert launcher._executors_of("app-8", launcher._processes([fake.pid])) == []
        assert fake.pid in launcher._executors_of("app-7", psutil.process_iter())
    finally:
        fake.kill()
        fake.wait()
