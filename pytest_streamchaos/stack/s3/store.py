"""A real S3-compatible object store on 127.0.0.1: SeaweedFS's ``weed mini`` (master, volume server, filer and
S3 gateway in one process), its data in a directory of the session, so a kill and a restart keep the objects.

Every port it opens (each component's HTTP and gRPC port, the admin server's) comes from the session's port
registry and is bound on 127.0.0.1 (``-ip.bind``); the Iceberg and Lance catalogues and WebDAV are off, and so
is its telemetry (which would reach out of the machine). ``weed mini`` puts its gRPC sockets in ``/tmp``
whatever ``TMPDIR`` says (``/tmp/seaweedfs-<component>-grpc-<port>.sock``): they are registered with the
reaper and removed with the store. Credentials: ``AWS_ACCESS_KEY_ID`` / ``AWS_SECRET_ACCESS_KEY`` in its
environment make that identity its admin.

The job never talks to it directly: its ``fs.s3a.endpoint`` is the store's fault proxy (:mod:`.proxy`),
which relays through a Toxiproxy proxy (when Toxiproxy is built) to the store's S3 port. The harness's own
reads (:meth:`ObjectStore.filesystem`, :meth:`ObjectStore.storage_options`) go to the S3 port directly: a
fault on the job's link to the store never blinds the observer.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fsspec.implementations.arrow import ArrowFSWrapper

from pytest_streamchaos.machine.ports import HOST
from pytest_streamchaos.poll import poll
from pytest_streamchaos.stack.base import Endpoint, StackError
from pytest_streamchaos.stack.host import Host, current
from pytest_streamchaos.stack.local.placement import LocalPlacement
from pytest_streamchaos.stack.process import Daemon, DaemonProcess, end_with
from pytest_streamchaos.stack.s3 import filer
from pytest_streamchaos.stack.s3.gate import ProxyGate
from pytest_streamchaos.stack.s3.install import Progress, weed_binary
from pytest_streamchaos.stack.s3.proxy import ErrorRule, FaultProxy
from pytest_streamchaos.stack.service import Service

if TYPE_CHECKING:  # built on first use: the module is imported when the door opens
    import pyarrow.fs as pafs
    from fsspec import AbstractFileSystem

    from pytest_streamchaos.stack.toxiproxy import ToxiProxy, ToxiproxyServer

#: the ports ``weed mini`` opens, by its flag (``-<name>=<port>``)
PORT_FLAGS = ("master.port", "master.port.grpc", "volume.port", "volume.port.grpc", "filer.port",
              "filer.port.grpc", "s3.port", "s3.port.grpc", "admin.port", "admin.port.grpc")
#: its components whose gRPC socket it puts in /tmp, and the flag of each one's gRPC port
SOCKETS = {"master": "master.port.grpc", "volume": "volume.port.grpc", "filer": "filer.port.grpc",
           "s3": "s3.port.grpc", "admin": "admin.port.grpc"}
ACCESS_KEY = "streamchaos"
SECRET_KEY = "streamchaos-secret"
REGION = "us-east-1"
#: the bucket of the runs' own checkpoints (``s3a://streamchaos/<run>/...``)
RUN_BUCKET = "streamchaos"


class StoreNode(Daemon):
    """The ``weed mini`` process."""

    role = "s3"

    @property
    def name(self) -> str:
        return "s3"

    def endpoint(self) -> Endpoint:
        return Endpoint("s3", "s3", HOST, {})


class ObjectStore(Service):
    """SeaweedFS on 127.0.0.1 (see the module docstring): :meth:`start`, :meth:`kill`, :meth:`restart`,
    :meth:`heal`, the harness's client (:meth:`filesystem`, :meth:`storage_options`) and the job's settings
    (:meth:`client_conf`)."""

    def __init__(self, workdir: str | os.PathLike, *, start_timeout: float = 60.0, host: Host | None = None,
                 progress: Progress | None = None) -> None:
        self.workdir = Path(workdir).absolute()
        self.host = host or current()
        self.start_timeout, self.progress = start_timeout, progress
        self.placement = LocalPlacement(self.host)
        self.ports: dict[str, int] = {}
        self.node = StoreNode(0, self._launch)
        self.proxy: FaultProxy | None = None
        self.link: ToxiProxy | None = None  #: the Toxiproxy proxy between the fault proxy and the store (None: none)
        self.link_reason: str | None = None  #: why there is no Toxiproxy proxy
        self._toxiproxy: ToxiproxyServer | None = None
        self._binary: Path | None = None
        self._fs: _StoreFS | None = None
        self.killed = False  #: down by a fault (not a start-up failure)

    # -- where ------------------------------------------------------------------------------------------
    @property
    def s3_port(self) -> int:
        return self.ports["s3.port"]

    @property
    def default_fs(self) -> str:
        """``s3a://streamchaos``: the root of the runs' own checkpoints."""
        return f"s3a://{RUN_BUCKET}"

    @property
    def endpoint(self) -> str:
        """The store's own S3 endpoint (the harness's)."""
        return f"http://{HOST}:{self.s3_port}"

    @property
    def job_endpoint(self) -> str:
        """The endpoint the job is given: the fault proxy's."""
        if self.proxy is None:
            raise StackError("the object store is not started")
        return f"http://{HOST}:{self.proxy.port}"

    # -- start / stop -----------------------------------------------------------------------------------
    def start(self) -> ObjectStore:
        """Install SeaweedFS (once per machine), allocate its ports, start it and wait until its S3 gateway
        answers; then the job's way in (the fault proxy, and Toxiproxy when built). :class:`StackError` naming
        the fix on failure, with everything started stopped again."""
        if self.node.process is not None:
            return self
        self._binary = weed_binary(self.progress)
        self.ports = {flag: self.host.ports.free() for flag in PORT_FLAGS}
        for sub in ("data", "logs", "tmp"):
            (self.workdir / sub).mkdir(parents=True, exist_ok=True)
        for path in self.sockets():
            self.host.reaper.register_path(path)
        try:
            self.node.start()
            self.wait_ready(self.start_timeout)
            self.ensure_bucket(RUN_BUCKET)
            self._open_door()
        except BaseException:
            self.stop()
            raise
        return self

    def sockets(self) -> list[Path]:
        """The gRPC sockets ``weed mini`` leaves in /tmp (see the module docstring)."""
        return [Path(f"/tmp/seaweedfs-{c}-grpc-{self.ports[flag]}.sock") for c, flag in SOCKETS.items()
                if flag in self.ports]

    def _argv(self) -> list[str]:
        flags = [f"-{flag}={port}" for flag, port in self.ports.items()]
        data = self.workdir / "data"
        return [str(self._binary), f"-logdir={self.workdir / 'logs'}", "mini", f"-dir={data}", f"-ip={HOST}",
                f"-ip.bind={HOST}", *flags, "-s3.port.iceberg=0", "-s3.port.lance=0", "-webdav=false",
                "-admin.ui=false", "-master.telemetry=false", "-master.volumeSizeLimitMB=64",
                f"-filer.localSocket={data / 'filer.sock'}", f"-s3.localSocket={data / 's3.sock'}",
                f"-s3.localFilerSocket={data / 'filer-s3.sock'}"]

    def _launch(self) -> DaemonProcess:
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(self.workdir),
               "TMPDIR": str(self.workdir / "tmp"), "AWS_ACCESS_KEY_ID": ACCESS_KEY,
               "AWS_SECRET_ACCESS_KEY": SECRET_KEY}
        return self.placement.launch(self._argv(), env=env, name="seaweedfs", cwd=self.workdir,
                                     log_path=self.workdir / "logs" / "weed.log")

    def _open_door(self) -> None:
        """The job's way in: Toxiproxy in front of the S3 port (when built: link faults act there), and the
        fault proxy in front of that."""
        upstream = f"{HOST}:{self.s3_port}"
        try:
            from pytest_streamchaos.stack.toxiproxy import ToxiproxyServer, toxiproxy_server_binary

            self._toxiproxy = ToxiproxyServer(self.workdir / "logs", binary=toxiproxy_server_binary(self.progress),
                                              host=self.host)
            self.link = self._toxiproxy.create_proxy("job-s3", upstream)
            upstream = f"{HOST}:{self.link.listen_port}"
        except StackError as exc:
            self.link, self.link_reason = None, str(exc)
        self.proxy = FaultProxy(self.host.ports.free(), upstream, self.workdir / "logs" / "requests.log").start()

    def stop(self) -> None:
        """Stop the proxies and the store (SIGTERM, SIGKILL after 5 s), remove its sockets. Idempotent."""
        if self.proxy is not None:
            self.proxy.stop()
            self.proxy = None
        if self._toxiproxy is not None:
            self._toxiproxy.stop()
            self._toxiproxy, self.link = None, None
        if self.node.process is not None:
            self.node.process.terminate(timeout=5.0)
            self.node.process = None
        for path in self.sockets():
            path.unlink(missing_ok=True)
            self.host.reaper.unregister_path(path)

    # -- readiness ------------------------------------------------------------------------------------------
    def answers(self) -> bool:
        """Whether the S3 gateway answers a signed ListBuckets now."""
        import pyarrow.fs as pafs

        try:
            self.arrow_fs(attempts=1).get_file_info(pafs.FileSelector("", recursive=False))
        except OSError:
            return False
        return True

    def wait_ready(self, timeout: float) -> float:
        """Wait until the S3 gateway answers (the seconds it took); :class:`StackError` when the process
        exits or ``timeout`` passes, with its log's tail."""
        t0 = time.monotonic()

        def up() -> bool:
            proc = self.node.process
            if proc is None or not proc.alive:
                code = proc.returncode if proc is not None else None
                raise StackError(self._failure(f"it exited with code {code}"))
            return self.answers()

        poll(up, timeout, lambda _: StackError(self._failure(f"its S3 gateway did not answer within {timeout:g}s")),
             interval=0.1)
        return time.monotonic() - t0

    def _failure(self, why: str) -> str:
        proc = self.node.process
        log = proc.log_path if proc is not None else self.workdir / "logs" / "weed.log"
        tail = proc.tail_log(20) if proc is not None else ""
        where = f"{HOST}:{self.ports.get('s3.port')}"
        return f"SeaweedFS (weed mini) on {where} did not come up: {why} (log {log}):\n{tail}"

    # -- faults ------------------------------------------------------------------------------------------------
    @property
    def alive(self) -> bool:
        return self.node.alive

    def kill(self, sig: int = signal.SIGKILL, wait: bool = True) -> None:
        """Send ``sig`` to the store; with ``wait``, return once it is gone."""
        proc = self.node.started()
        self.killed = True
        end_with(proc, sig, wait)

    def wait_gone(self, timeout: float = 10.0) -> None:
        self.node.started().wait_gone(timeout)

    def restart(self, wait: bool = True, timeout: float | None = None) -> None:
        """Start the store again (killed first if running) on the same ports and data; with ``wait``, return
        once its S3 gateway answers."""
        proc = self.node.process
        if proc is not None:
            proc.kill(timeout=10)  # reap what is left of the old group
        self.killed = False
        self.node.start()
        if wait:
            self.wait_ready(timeout or self.start_timeout)

    def heal(self, timeout: float = 60.0) -> None:
        """Started again if down, no fault left on the job's way in (error rules, a hold, toxics)."""
        if self.node.process is None:
            raise StackError("heal() before start(): the object store is not running")
        if self.proxy is not None:
            for rule in list(self.proxy.rules):
                self.proxy.remove(rule)
            self.proxy.gate.disarm()
        if self.link is not None:
            self.link.reset()
        if not self.node.alive:
            self.restart(wait=False)
        self.wait_ready(timeout)

    def refuse(self, status: int, ops: Sequence[str], rate: float, code: str = "", seed: int = 0) -> ErrorRule:
        """From now on the proxy refuses ``rate`` of the job's requests of ``ops`` (:data:`.ops.OPS`) with
        ``status`` and S3's ``code`` (:class:`~.proxy.ErrorRule`)."""
        return self._door().add(ErrorRule(status, frozenset(ops), rate, code, seed))

    def allow(self, rule: ErrorRule) -> None:
        """Stop refusing by ``rule``."""
        self._door().remove(rule)

    def gate(self) -> ProxyGate:
        """The checkpoint gate of a checkpoint on the store: its proxy holds S3A's renames (:mod:`.gate`)."""
        return self._door().gate

    def _door(self) -> FaultProxy:
        if self.proxy is None:
            raise StackError("the object store is not started")
        return self.proxy

    # -- clients ----------------------------------------------------------------------------------------------
    def ensure_bucket(self, name: str) -> bool:
        """Create bucket ``name`` unless it is there; whether it was created."""
        import pyarrow.fs as pafs

        fs = self.arrow_fs()
        if fs.get_file_info(name).type != pafs.FileType.NotFound:
            return False
        fs.create_dir(name)
        return True

    def filesystem(self) -> AbstractFileSystem:
        """An fsspec filesystem on the store (pyarrow's S3 client, path style, the store's own port) whose
        recursive ``rm`` leaves nothing S3 lists (:meth:`remove`)."""
        if self._fs is None:  # one client: pyarrow's S3 client is made once, its connections kept
            self._fs = _StoreFS(self.arrow_fs(), store=self)
        return self._fs

    def remove(self, path: str) -> None:
        """Everything under ``<bucket>/<key>`` gone, as on S3, folders included (:func:`.filer.remove`); a
        bucket's name: the bucket emptied."""
        filer.remove(f"http://{HOST}:{self.ports['filer.port']}", path)

    def clear(self, bucket: str) -> None:
        """Bucket ``bucket`` there and empty (created if missing; :meth:`remove` of all it holds)."""
        self.ensure_bucket(bucket)
        self.remove(bucket)

    def arrow_fs(self, attempts: int = 3) -> pafs.S3FileSystem:
        """pyarrow's S3 filesystem on the store's own port (paths ``<bucket>/<key>``), path style, plain HTTP."""
        import pyarrow.fs as pafs

        return pafs.S3FileSystem(access_key=ACCESS_KEY, secret_key=SECRET_KEY, region=REGION, scheme="http",
                                 endpoint_override=f"{HOST}:{self.s3_port}", connect_timeout=2, request_timeout=10,
                                 allow_bucket_creation=True,
                                 retry_strategy=pafs.AwsStandardS3RetryStrategy(max_attempts=attempts))

    def table_uri(self, path: str) -> str:
        """delta-rs's URL of the table at ``<bucket>/<key>`` on the store."""
        return f"s3://{path}"

    def storage_options(self) -> dict[str, str]:
        """The store for delta-rs (``deltalake``'s ``storage_options``): its own port, path style, plain HTTP."""
        return {"AWS_ENDPOINT_URL": self.endpoint, "AWS_ACCESS_KEY_ID": ACCESS_KEY,
                "AWS_SECRET_ACCESS_KEY": SECRET_KEY, "AWS_REGION": REGION, "AWS_ALLOW_HTTP": "true",
                "AWS_VIRTUAL_HOSTED_STYLE_REQUEST": "false", "AWS_S3_ALLOW_UNSAFE_RENAME": "true"}

    def client_conf(self) -> dict[str, str]:
        """The Hadoop settings that put a job's ``s3a://`` paths on the store, through its fault proxy (for
        Spark, prefix each key with ``spark.hadoop.``)."""
        # S3A buffers uploads under ${hadoop.tmp.dir}/s3a (/tmp/hadoop-<user>/s3a), which would outlive the
        # session: the store's own directory goes with it
        return {"fs.s3a.buffer.dir": str(self.workdir / "s3a-buffer"),
                "fs.s3a.endpoint": self.job_endpoint, "fs.s3a.endpoint.region": REGION,
                "fs.s3a.path.style.access": "true", "fs.s3a.connection.ssl.enabled": "false",
                "fs.s3a.aws.credentials.provider": "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider",
                "fs.s3a.access.key": ACCESS_KEY, "fs.s3a.secret.key": SECRET_KEY}


class _StoreFS(ArrowFSWrapper):
    """The store's fsspec filesystem: pyarrow's, but a recursive ``rm`` of a folder is :meth:`ObjectStore.remove`
    (pyarrow's would leave the folders SeaweedFS keeps)."""

    def __init__(self, fs: pafs.FileSystem, store: ObjectStore, **kwargs: Any) -> None:
        super().__init__(fs, **kwargs)
        self.store = store

    def rm(self, path: Any, recursive: bool = False, maxdepth: int | None = None) -> None:
        if recursive and isinstance(path, str) and self.isdir(path):
            self.store.remove(self._strip_protocol(path))
            return
        super().rm(path, recursive=recursive, maxdepth=maxdepth)
