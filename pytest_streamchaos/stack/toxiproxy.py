"""Shopify's Toxiproxy as a stack piece: the pinned server binary, the server process, its proxies.

The job reaches each Kafka broker through one proxy of a ``toxiproxy-server`` (the broker advertises
the proxy's port), so network faults on those links are toxics and proxy state, with no privileges
and no kernel features (:mod:`pytest_streamchaos.netem.toxics`)::

    server = ToxiproxyServer(workdir=tmp_path)          # started, ready (GET /version answered)
    proxy = server.create_proxy("broker-1", "127.0.0.1:9093")
    connect_to(proxy.listen_port)
    proxy.add_toxic("latency", "downstream", {"latency": 200, "jitter": 0})
    proxy.disable()                                     # drops its connections, refuses new ones
    server.reset()                                      # all proxies enabled, all toxics removed
    server.stop()

**The binary** (:func:`toxiproxy_server_binary`): ``$STREAMCHAOS_TOXIPROXY_SERVER``, else a
``toxiproxy-server`` 2.x on PATH, else the pinned release built once per machine with ``go install``
into ``<cache>/bin/toxiproxy-<version>/`` (a ``done.json`` marker written last; a later call is
offline and instant). Concurrent builds (two pytest processes) are serialised by a lock file.

**Why not toxiproxy-python** (the ``toxiproxy`` module, 0.1.1, 2019) as the client, although it
works against server 2.12 for creating proxies, toxics and enabling: its API address is class-global
(``APIConsumer.host/port``), so two servers in one process (a session's and a test's own) would talk
to whichever was set last; it cannot change a proxy's upstream (``PATCH /proxies/{name}``); its
requests have no timeout, so a frozen (SIGSTOPped) server would hang the fault's once-a-second
``stopped_acting()`` check for ever; a refused call (HTTP 500, e.g. the listen port taken) comes out
as ``KeyError: 'name'``; and it updates proxies with POST, which 2.12 logs as deprecated. So
:class:`ToxiproxyServer` speaks Toxiproxy's small HTTP API itself with ``requests``, with a timeout
and errors that quote the server's answer.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import requests

from pytest_streamchaos.assets import cache_dir
from pytest_streamchaos.jsonfile import write_json
from pytest_streamchaos.machine import commands
from pytest_streamchaos.poll import poll
from pytest_streamchaos.stack.base import NetFaultError, StackError
from pytest_streamchaos.stack.host import Host, current
from pytest_streamchaos.stack.process import ManagedProcess
from pytest_streamchaos.stack.service import Service

#: the pinned Toxiproxy release (the latest 2.x when pinned; needs Go >= 1.23 to build)
TOXIPROXY_VERSION = "2.12.0"
TOXIPROXY_PACKAGE = "github.com/Shopify/toxiproxy/v2/cmd/server"
MIN_GO = (1, 23)
#: an existing toxiproxy-server binary to use instead of building one
ENV_BINARY = "STREAMCHAOS_TOXIPROXY_SERVER"
BUILD_TIMEOUT_S = 900.0
#: how long one API call may take: the server answers in microseconds, a frozen one never
API_TIMEOUT_S = 5.0
TOXIC_KINDS = ("latency", "bandwidth", "slow_close", "timeout", "reset_peer", "slicer", "limit_data")
STREAMS = ("upstream", "downstream")

Progress = Callable[[str], None]


# -- the binary ------------------------------------------------------------------------------------

def _fix(first: str = "") -> str:
    """The fix for a missing binary: ``first``, by default installing Go, or bringing a binary."""
    first = first or f"install Go >= {MIN_GO[0]}.{MIN_GO[1]} with `go` on PATH (then it is built once per machine)"
    return f"{first}, or put a toxiproxy-server {TOXIPROXY_VERSION[0]}.x binary on PATH / set {ENV_BINARY} to one"


def binary_folder() -> Path:
    """``<cache>/bin/toxiproxy-<version>``: the built binary and its ``done.json`` marker."""
    return cache_dir() / "bin" / f"toxiproxy-{TOXIPROXY_VERSION}"


def server_version(binary: str | os.PathLike) -> str | None:
    """The version ``binary -version`` prints (``2.12.0``), or None when it does not run or say one."""
    try:
        out = commands.completed([str(binary), "-version"], timeout=10)
    except commands.CommandError:
        return None
    m = re.search(r"(\d+\.\d+\.\d+)", out.stdout + out.stderr)
    return m.group(1) if out.returncode == 0 and m else None


def is_built() -> bool:
    """Whether a ``toxiproxy-server`` is there to run without building one (given, on PATH, or cached)."""
    try:
        return toxiproxy_server_binary(build=False) is not None
    except StackError:
        return False


def toxiproxy_server_binary(progress: Progress | None = None, *, announce: bool = True, build: bool = True) -> Path:
    """The ``toxiproxy-server`` to run (see the module docstring for the order); builds the pinned
    release on first use, writing one line to ``progress`` (default stderr) when the build starts
    (unless ``announce`` is false) and one when it ends. Raises :class:`StackError` naming the fix when
    there is none and none can be built (or ``build`` is false)."""
    given = os.environ.get(ENV_BINARY)
    if given:
        if (server_version(given) or "").startswith("2."):
            return Path(given)
        raise StackError(f"{ENV_BINARY}={given} is not a toxiproxy-server 2.x (`{given} -version` says "
                         f"{server_version(given)!r}); fix: point it at one, or unset it to build the pinned "
                         f"{TOXIPROXY_VERSION}")
    on_path = shutil.which("toxiproxy-server")
    if on_path and (server_version(on_path) or "").startswith("2."):
        return Path(on_path)
    found = _cached()
    if found is not None:
        return found
    if not build:
        raise StackError(f"toxiproxy-server {TOXIPROXY_VERSION} is not built yet")
    go = _go()  # before the lock file or the folder exist: a failure leaves nothing behind
    folder = binary_folder()
    folder.parent.mkdir(parents=True, exist_ok=True)
    with open(folder.parent / f".toxiproxy-{TOXIPROXY_VERSION}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another process may be building it right now
        found = _cached()
        if found is not None:
            return found
        return _build(go, progress or _stderr, announce)


def _cached() -> Path | None:
    """The built binary when its marker (written last) names this version and the file is there."""
    folder = binary_folder()
    try:
        done = json.loads((folder / "done.json").read_text())
    except (OSError, ValueError):
        return None
    exe = folder / "toxiproxy-server"
    ok = done.get("version") == TOXIPROXY_VERSION and exe.is_file() and os.access(exe, os.X_OK)
    return exe if ok else None


def _go() -> str:
    """The ``go`` command, checked to be new enough; :class:`StackError` naming the fix otherwise."""
    go = shutil.which("go")
    if not go:
        raise StackError(f"cannot build toxiproxy-server {TOXIPROXY_VERSION}: no `go` on PATH; fix: {_fix()}")
    out = commands.completed([go, "env", "GOVERSION"], timeout=60, error=lambda why: StackError(
        f"cannot build toxiproxy-server: {why}; fix: {_fix()}")).stdout
    m = re.match(r"go(\d+)\.(\d+)", out.strip())
    if not m or (int(m.group(1)), int(m.group(2))) < MIN_GO:
        raise StackError(f"cannot build toxiproxy-server {TOXIPROXY_VERSION}: {go} is {out.strip() or 'unknown'}, "
                         f"older than go{MIN_GO[0]}.{MIN_GO[1]}; fix: {_fix()}")
    return go


def _build(go: str, progress: Progress, announce: bool = True) -> Path:
    folder = binary_folder()
    target = f"{TOXIPROXY_PACKAGE}@v{TOXIPROXY_VERSION}"
    if announce:
        progress(f"pytest-streamchaos: building toxiproxy-server {TOXIPROXY_VERSION} (go install {target}) into "
                 f"{folder} (once per machine) ...")
    started = time.monotonic()
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    # GOTOOLCHAIN=local: a Go too old for the module fails here, rather than fetching another toolchain;
    # CGO_ENABLED=0: Toxiproxy is pure Go, so no C compiler is needed and the binary is static
    env = {**os.environ, "GOBIN": str(folder), "GOTOOLCHAIN": "local", "CGO_ENABLED": "0"}
    try:
        # the version is stamped at link time, as Toxiproxy's release builds do (else it says "git")
        stamp = f"-ldflags=-X github.com/Shopify/toxiproxy/v2.Version={TOXIPROXY_VERSION}"
        proc = commands.completed([go, "install", stamp, target], env=env, timeout=BUILD_TIMEOUT_S)
        why = None if proc.returncode == 0 else (proc.stderr.strip().splitlines() or ["no output"])[-1]
    except commands.CommandError as exc:
        why = str(exc)
    exe = folder / "toxiproxy-server"
    if why is None and not (folder / "server").is_file():
        why = f"it succeeded but left no `server` binary in {folder}"
    if why is None:
        (folder / "server").rename(exe)
        if server_version(exe) != TOXIPROXY_VERSION:
            why = f"the built binary says version {server_version(exe)!r}"
    if why is not None:
        shutil.rmtree(folder, ignore_errors=True)
        raise StackError(f"`go install {target}` failed: {why}; fix: "
                         + _fix("check that this machine reaches the Go module proxy (GOPROXY) and run again"))
    write_json(folder / "done.json", {"version": TOXIPROXY_VERSION, "package": target, "go": go,
                                      "built_at": time.time()})
    progress(f"pytest-streamchaos: built toxiproxy-server {TOXIPROXY_VERSION} in {time.monotonic() - started:.1f}s")
    return exe


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


# -- the server ------------------------------------------------------------------------------------

class ToxiproxyError(NetFaultError):
    """The Toxiproxy API refused a call or did not answer; the message names the call and the answer."""


class ToxiproxyServer(Service):
    """A ``toxiproxy-server`` on 127.0.0.1 as a :class:`ManagedProcess` (own process group, registered
    with the reaper), started and ready when the constructor returns (a :class:`Service`: ``stop`` and
    ``with``; ``start`` again after a ``stop`` brings it back on the same port). Its log is
    ``<workdir>/toxiproxy-<port>.log``."""

    def __init__(self, workdir: str | os.PathLike, port: int | None = None, *, binary: str | os.PathLike | None = None,
                 timeout: float = 15.0, host: Host | None = None) -> None:
        self.binary = Path(binary) if binary is not None else toxiproxy_server_binary()
        self.host = host or current()
        self.port = port or self.host.ports.free()
        self.url = f"http://127.0.0.1:{self.port}"
        self.workdir, self.timeout = Path(workdir), timeout
        self._http = requests.Session()
        self.proc: ManagedProcess | None = None
        self.start()

    def start(self) -> ToxiproxyServer:
        """Start the server and wait until ``GET /version`` answers; nothing when it runs already."""
        if self.proc is not None and self.proc.alive:
            return self
        self.proc = ManagedProcess([str(self.binary), "-host", "127.0.0.1", "-port", str(self.port)],
                                   env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LOG_LEVEL": "info"},
                                   log_path=self.workdir / f"toxiproxy-{self.port}.log", name="toxiproxy-server",
                                   host=self.host)
        try:
            self.started_in = self._await_ready(self.timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def _await_ready(self, timeout: float) -> float:
        """Poll GET /version until it answers; the seconds that took."""
        t0 = time.monotonic()
        last: list[str] = ["no answer yet"]

        def up() -> bool:
            if not self._proc.alive:  # it died (port taken, bad binary): waiting longer cannot help
                raise StackError(self._failure(f"it exited with code {self._proc.returncode}"))
            try:
                return self._http.get(f"{self.url}/version", timeout=1.0).ok
            except requests.RequestException as exc:
                last[0] = str(exc)
                return False

        poll(up, timeout, lambda _: StackError(self._failure(f"GET /version unanswered after {timeout:g}s "
                                                              f"(last: {last[0]})")))
        return time.monotonic() - t0

    def _failure(self, why: str) -> str:
        return (f"toxiproxy-server ({self.binary}) on 127.0.0.1:{self.port} did not come up: {why}; its log "
                f"{self._proc.log_path}:\n{self._proc.tail_log(15)}")

    @property
    def _proc(self) -> ManagedProcess:
        assert self.proc is not None, "ToxiproxyServer.start() sets the process"
        return self.proc

    @property
    def pid(self) -> int:
        """The server's pid (also its process group id)."""
        return self._proc.pid

    @property
    def returncode(self) -> int | None:
        """The server's exit code once it exited (None while it runs)."""
        return self._proc.returncode

    @property
    def alive(self) -> bool:
        """Whether the server process runs (a SIGSTOPped one is alive but does not answer)."""
        return self.proc is not None and self.proc.alive

    def stop(self) -> None:
        """Stop the server (SIGTERM, SIGKILL after 5 s) and wait until its process group is gone. Idempotent."""
        if self.proc is not None:
            self.proc.stop(timeout=5.0)
        self._http.close()

    # -- the API -----------------------------------------------------------------------------------
    def api(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        """One API call; its JSON answer (None for an empty one). :class:`ToxiproxyError` when the
        server refuses it (naming its answer) or does not answer within :data:`API_TIMEOUT_S`."""
        try:
            r = self._http.request(method, self.url + path, json=body, timeout=API_TIMEOUT_S)
        except requests.RequestException as exc:
            raise ToxiproxyError(f"toxiproxy {method} {path}: no answer from {self.url} ({exc})") from None
        if not r.ok:
            raise ToxiproxyError(f"toxiproxy {method} {path} {body or ''}: HTTP {r.status_code} {r.text.strip()}")
        return r.json() if r.content.strip() else None

    def version(self) -> str:
        """The server's version, e.g. ``2.12.0``."""
        return str(self.api("GET", "/version")["version"])

    def reset(self) -> None:
        """Every proxy enabled, every toxic removed (between tests)."""
        self.api("POST", "/reset")

    def proxies(self) -> dict[str, dict[str, Any]]:
        """The server's proxies by name, as the API lists them."""
        return self.api("GET", "/proxies")

    def create_proxy(self, name: str, upstream: str, listen_port: int = 0) -> ToxiProxy:
        """A new proxy ``name`` on 127.0.0.1:``listen_port`` (0: a port from :mod:`.ports`) to ``upstream``."""
        return ToxiProxy.create(self, name, upstream, listen_port)


# -- a proxy ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Toxic:
    """A toxic as the server reports it."""

    name: str
    type: str
    stream: str
    toxicity: float = 1.0
    attributes: dict[str, Any] = field(default_factory=dict)


@dataclass
class ToxiProxy:
    """A handle on one proxy of a :class:`ToxiproxyServer` (state is read from the server, not kept)."""

    server: ToxiproxyServer
    name: str
    listen_port: int

    @classmethod
    def create(cls, server: ToxiproxyServer, name: str, upstream: str, listen_port: int = 0) -> ToxiProxy:
        """Create proxy ``name`` listening on 127.0.0.1:``listen_port`` and forwarding to ``upstream``
        (``host:port``). Port 0 takes one from the server's host (:mod:`pytest_streamchaos.machine.ports`), below
        the ephemeral range: a disabled proxy releases its port, and re-enabling must find it still free."""
        port = listen_port or server.host.ports.free()
        got = server.api("POST", "/proxies", {"name": name, "upstream": upstream, "listen": f"127.0.0.1:{port}",
                                              "enabled": True})
        return cls(server, name, int(got["listen"].rsplit(":", 1)[1]))

    @property
    def path(self) -> str:
        """The proxy's API path."""
        return f"/proxies/{quote(self.name, safe='')}"

    def info(self) -> dict[str, object]:
        """The proxy as the server has it: ``name``, ``listen``, ``upstream``, ``enabled``, ``toxics``."""
        return self.server.api("GET", self.path)

    @property
    def upstream(self) -> str:
        """Where the proxy forwards to (``host:port``), as the server has it."""
        return str(self.info()["upstream"])

    @property
    def enabled(self) -> bool:
        """Whether the proxy listens, as the server has it."""
        return bool(self.info()["enabled"])

    def add_toxic(self, kind: str, stream: str = "downstream", attributes: dict[str, Any] | None = None,
                  toxicity: float = 1.0, name: str | None = None) -> Toxic:
        """Add a toxic of ``kind`` (:data:`TOXIC_KINDS`) on ``stream`` (``upstream``: client -> server,
        ``downstream``: server -> client); ``name`` defaults to ``<kind>_<stream>``, as Toxiproxy's."""
        if kind not in TOXIC_KINDS or stream not in STREAMS:
            raise ValueError(f"toxic {kind!r} on {stream!r}: kinds are {TOXIC_KINDS}, streams {STREAMS}")
        got = self.server.api("POST", f"{self.path}/toxics", {
            "name": name or f"{kind}_{stream}", "type": kind, "stream": stream, "toxicity": toxicity,
            "attributes": attributes or {}})
        return Toxic(**got)

    def remove_toxic(self, name: str) -> None:
        """Remove toxic ``name`` (:class:`ToxiproxyError` with HTTP 404 when there is none)."""
        self.server.api("DELETE", f"{self.path}/toxics/{quote(name, safe='')}")

    def toxics(self) -> dict[str, Toxic]:
        """The proxy's toxics by name."""
        return {t["name"]: Toxic(**t) for t in self.server.api("GET", f"{self.path}/toxics")}

    def disable(self) -> None:
        """Close every connection and stop listening (new connects are refused)."""
        self.server.api("PATCH", self.path, {"enabled": False})

    def enable(self) -> None:
        """Listen again, on the same port."""
        self.server.api("PATCH", self.path, {"enabled": True})

    def set_upstream(self, upstream: str) -> None:
        """Forward new connections to ``upstream`` (``host:port``); the server restarts the proxy, which
        closes the connections it had."""
        self.server.api("PATCH", self.path, {"upstream": upstream})

    def reset(self) -> None:
        """No toxics, enabled."""
        for name in self.toxics():
            self.remove_toxic(name)
        self.enable()

    def destroy(self) -> None:
        """Remove the proxy from the server (its connections close, its port is released)."""
        self.server.api("DELETE", self.path)
