"""The one way the package runs a short host command (iptables, tc, nsenter, git, java -version ...).

Every command runs with a timeout, its stdin closed and its output captured as text, and a failure is
one error that names the command, what went wrong and the fix. :func:`run` is for commands that must
succeed (their stdout back); :func:`completed` for callers that read the exit code themselves (``-C``
checks, probes). Long-lived helper processes are not commands: they are
:mod:`pytest_streamchaos.stack.process`'s.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence

#: how long a command may take unless the caller says otherwise (iptables waits <= 5 s for its lock)
DEFAULT_TIMEOUT_S = 30.0

ErrorFactory = Callable[[str], Exception]
#: the bits of CAP_NET_ADMIN and CAP_SYS_ADMIN in a capability set (linux/capability.h)
CAP_NET_ADMIN = 12
CAP_SYS_ADMIN = 21


class CommandError(RuntimeError):
    """A host command could not start, timed out, or failed. The message names the command and the fix."""


def shown(argv: Sequence[str]) -> str:
    """``argv`` as one would type it (for messages)."""
    return " ".join(str(a) for a in argv)


def _with_fix(message: str, fix: str) -> str:
    return f"{message} - {fix}" if fix else message


def need(program: str, fix: str, error: ErrorFactory = CommandError) -> str:
    """The path of ``program`` on PATH; raise ``error("no `program` on PATH: fix")`` without it."""
    path = shutil.which(program)
    if path is None:
        raise error(f"no `{program}` on PATH: {fix}")
    return path


def completed(argv: Sequence[str], *, timeout: float = DEFAULT_TIMEOUT_S, fix: str = "",
              error: ErrorFactory = CommandError, env: Mapping[str, str] | None = None,
              ) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` and return its CompletedProcess whatever its exit code (stdout and stderr as text).
    Raise ``error`` naming the command when it cannot start or does not finish within ``timeout``."""
    args = [str(a) for a in argv]
    try:
        return subprocess.run(args, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout,
                              env=None if env is None else dict(env))
    except subprocess.TimeoutExpired as exc:
        raise error(_with_fix(f"`{shown(args)}` did not finish within {timeout:g}s", fix)) from exc
    except OSError as exc:
        raise error(_with_fix(f"`{shown(args)}` could not start: {exc}", fix)) from exc


def completed_all(argvs: Sequence[Sequence[str]], *, timeout: float = DEFAULT_TIMEOUT_S, fix: str = "",
                  error: ErrorFactory = CommandError, env: Mapping[str, str] | None = None,
                  ) -> list[subprocess.CompletedProcess[str]]:
    """:func:`completed` for several commands run at once (each a JVM tool: on 2 cores, side by side is
    faster than one after another); their results in order, stdout and stderr together in ``stdout``.
    Raise ``error`` naming a command that cannot start or does not finish within ``timeout`` (counted
    for all together); the others are killed then."""
    procs: list[tuple[list[str], subprocess.Popen[str]]] = []
    deadline = time.monotonic() + timeout
    try:
        for argv in argvs:
            args = [str(a) for a in argv]
            try:
                procs.append((args, subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                                     stderr=subprocess.STDOUT, text=True,
                                                     env=None if env is None else dict(env))))
            except OSError as exc:
                raise error(_with_fix(f"`{shown(args)}` could not start: {exc}", fix)) from exc
        out = []
        for args, proc in procs:
            try:
                stdout, _ = proc.communicate(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired as exc:
                raise error(_with_fix(f"`{shown(args)}` did not finish within {timeout:g}s", fix)) from exc
            out.append(subprocess.CompletedProcess(args, proc.returncode, stdout, ""))
        return out
    finally:
        for _, proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def check(p: subprocess.CompletedProcess[str], *, fix: str = "", error: ErrorFactory = CommandError,
          ) -> subprocess.CompletedProcess[str]:
    """``p`` when it exited 0; else raise ``error("`cmd` failed (exit N): <stderr> - fix")``."""
    if p.returncode != 0:
        raise error(_with_fix(f"`{shown(p.args)}` failed (exit {p.returncode}): {p.stderr.strip()}", fix))
    return p


def run(argv: Sequence[str], *, timeout: float = DEFAULT_TIMEOUT_S, fix: str = "",
        error: ErrorFactory = CommandError, env: Mapping[str, str] | None = None) -> str:
    """Run ``argv``, which must succeed, and return its stdout; raise ``error`` naming the command, its
    exit code and stderr, and ``fix``, otherwise."""
    return check(completed(argv, timeout=timeout, fix=fix, error=error, env=env), fix=fix, error=error).stdout


def has_net_admin(status: str | None = None) -> bool:
    """Whether this process has CAP_NET_ADMIN in its effective set (root normally has), which iptables
    and tc commands need; ``status``: the text of the process's status file (read when None)."""
    return has_capability(CAP_NET_ADMIN, status)


def has_sys_admin(status: str | None = None) -> bool:
    """Whether this process has CAP_SYS_ADMIN in its effective set (root normally has), which
    ``mount`` needs (a fault's small filesystem)."""
    return has_capability(CAP_SYS_ADMIN, status)


def has_capability(bit: int, status: str | None = None) -> bool:
    """Whether capability ``bit`` (linux/capability.h) is in this process's effective set; without a
    status file to read, whether it runs as root."""
    if status is None:
        try:
            with open("/proc/self/status") as f:
                status = f.read()
        except OSError:
            return os.geteuid() == 0
    for line in status.splitlines():
        if line.startswith("CapEff:"):
            return bool(int(line.split()[1], 16) >> bit & 1)
    return os.geteuid() == 0
