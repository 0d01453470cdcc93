"""Ryuk-style safety net: whatever the plugin started dies with the pytest process that started it.

A tiny watchdog Python process (its own session, so Ctrl-C on the terminal does not reach it) is
started lazily once per pytest process and reads registration lines from a pipe. The parent is the
only writer; when the pipe reaches EOF without a ``close`` line - the parent exited, crashed or was
SIGKILLed - the watchdog

1. SIGKILLs every registered process group (guarding against PID reuse, see below),
2. runs every registered cleanup command (e.g. an ``iptables -D`` rule),
3. deletes every registered path,

and exits. Normal teardown is the fixtures' job (they stop processes and unregister them); the
watchdog only acts on what is still registered when the parent goes away.

PID reuse: a process group id stays reserved by the kernel while any member lives, so ``killpg`` on a
registered pgid can only hit our group - unless the whole group died and an unrelated process later got
that number as its own group. The parent sends the leader's start time (``/proc/<pid>/stat`` field 22)
with each pgid; the watchdog skips a pgid whose leader now exists with a different start time.

One watchdog per session: its :class:`~.host.Host` starts it (``host.reaper``). Usage::

    r = host.reaper
    r.register_pgid(proc.pgid)
    r.register_command("iptables-rule-1", ["iptables", "-D", "INPUT", ...])
    r.register_path(tmpdir)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import weakref
from pathlib import Path

# The watchdog's source, run with ``python -I -c`` so it imports nothing of ours (fast, and immune to
# the parent's sys.path). Standard library only.
_WATCHDOG_SRC = r'''
import json, os, shutil, signal, subprocess, sys
for s in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM, signal.SIGQUIT):
    signal.signal(s, signal.SIG_IGN)   # only EOF on the pipe (or SIGKILL) ends us
pgids, commands, paths = {}, {}, []

def start_time(pid):
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            data = f.read()
    except OSError:
        return None
    return int(data[data.rindex(b")") + 2:].split()[19])

def reap():
    for pgid, started in list(pgids.items()):
        now = start_time(pgid)
        if started is not None and now is not None and now != started:
            continue  # the number was reused by an unrelated process group
        for sig in (signal.SIGKILL, signal.SIGCONT):  # SIGCONT: belt and braces for stopped groups
            try:
                os.killpg(pgid, sig)
            except OSError:
                pass
    for argv, timeout in commands.values():
        try:
            subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, timeout=timeout)
        except Exception:
            pass
    for p in paths:
        try:
            if os.path.isdir(p) and not os.path.islink(p):
                shutil.rmtree(p, ignore_errors=True)
            else:
                os.unlink(p)
        except OSError:
            pass

sys.stdout.write("ready\n")
sys.stdout.flush()
sys.stdout.close()
for line in sys.stdin:
    try:
        m = json.loads(line)
    except ValueError:
        continue
    op = m.get("op")
    if op == "close":
        sys.exit(0)
    elif op == "pgid+":
        pgids[int(m["pgid"])] = m.get("start")
    elif op == "pgid-":
        pgids.pop(int(m["pgid"]), None)
    elif op == "cmd+":
        commands[m["key"]] = (list(m["argv"]), float(m.get("timeout", 15)))
    elif op == "cmd-":
        commands.pop(m["key"], None)
    elif op == "path+":
        if m["path"] not in paths:
            paths.append(m["path"])
    elif op == "path-":
        if m["path"] in paths:
            paths.remove(m["path"])
reap()
'''


def proc_start_time(pid: int) -> int | None:
    """The start time of ``pid`` in clock ticks since boot (``/proc/<pid>/stat`` field 22), or None."""
    try:
        data = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    # The command name (field 2) may contain spaces and parentheses: split after the last ')'.
    return int(data[data.rindex(b")") + 2 :].split()[19])


class ReaperError(RuntimeError):
    """The watchdog could not be started or has gone away."""


class Reaper:
    """The parent's handle on the watchdog process (a session's: ``Host.reaper``)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._closed = False
        # -I: isolated (no user site, no PYTHON* env, no cwd on sys.path). Own session: a terminal
        # Ctrl-C or a killpg of pytest's group does not take the watchdog down with the parent.
        self._proc = subprocess.Popen(
            [sys.executable, "-I", "-c", _WATCHDOG_SRC],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            close_fds=True,
        )
        _LIVE.add(self)
        ready = self._proc.stdout.readline() if self._proc.stdout else b""
        if ready.strip() != b"ready":
            self._proc.kill()
            raise ReaperError(
                f"the reaper watchdog ({sys.executable} -I -c ...) did not start "
                f"(exit code {self._proc.poll()}); check that this Python can run subprocesses"
            )
        if self._proc.stdout is not None:
            self._proc.stdout.close()
        self.pid = self._proc.pid

    # -- registrations -------------------------------------------------------------------------
    def register_pgid(self, pgid: int) -> None:
        """Kill process group ``pgid`` if this process dies before :meth:`unregister_pgid`."""
        self._send({"op": "pgid+", "pgid": int(pgid), "start": proc_start_time(int(pgid))})

    def unregister_pgid(self, pgid: int) -> None:
        """Forget ``pgid`` (it was stopped normally)."""
        self._send({"op": "pgid-", "pgid": int(pgid)})

    def register_command(self, key: str, argv: list[str], timeout: float = 15.0) -> None:
        """Run ``argv`` if this process dies before :meth:`unregister_command` (``key`` replaces); it is killed
        after ``timeout`` seconds (a cluster's whole clean-up needs more than a rule's removal)."""
        self._send({"op": "cmd+", "key": str(key), "argv": [str(a) for a in argv], "timeout": float(timeout)})

    def unregister_command(self, key: str) -> None:
        """Forget the cleanup command registered under ``key``."""
        self._send({"op": "cmd-", "key": str(key)})

    def register_path(self, path: str | os.PathLike) -> None:
        """Delete ``path`` (file or directory tree) if this process dies before unregistering it."""
        self._send({"op": "path+", "path": os.path.abspath(os.fspath(path))})

    def unregister_path(self, path: str | os.PathLike) -> None:
        """Forget ``path``."""
        self._send({"op": "path-", "path": os.path.abspath(os.fspath(path))})

    # -- lifecycle -----------------------------------------------------------------------------
    @property
    def alive(self) -> bool:
        """Whether the watchdog process is running."""
        return self._proc.poll() is None

    def close(self, timeout: float = 5.0) -> None:
        """Normal end: tell the watchdog to exit *without* acting on the registrations. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            try:
                assert self._proc.stdin is not None
                self._proc.stdin.write(b'{"op": "close"}\n')
                self._proc.stdin.close()
            except (BrokenPipeError, OSError, ValueError):
                pass
        try:
            self._proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()

    def _send(self, message: dict) -> None:
        line = (json.dumps(message) + "\n").encode()
        with self._lock:
            if self._closed:
                raise ReaperError("the reaper was closed (its host was closed): nothing more can be registered")
            try:
                assert self._proc.stdin is not None
                self._proc.stdin.write(line)
                self._proc.stdin.flush()  # unbuffered intent: the registration must be there at our death
            except (BrokenPipeError, OSError) as exc:
                raise ReaperError(
                    f"the reaper watchdog (pid {self._proc.pid}) is gone (exit code {self._proc.poll()}); "
                    "processes started from now on would not be cleaned up if pytest is killed"
                ) from exc

    def _drop_in_forked_child(self) -> None:
        # A forked child must not keep the write end open (the watchdog would never see EOF while it
        # lives) and must not talk to the parent's watchdog.
        self._closed = True
        try:
            if self._proc.stdin is not None:
                os.close(self._proc.stdin.fileno())
        except OSError:
            pass


_LIVE: weakref.WeakSet[Reaper] = weakref.WeakSet()  # for the fork handler below, not a resource


def _after_fork_in_child() -> None:
    for reaper in list(_LIVE):
        reaper._drop_in_forked_child()


os.register_at_fork(after_in_child=_after_fork_in_child)
