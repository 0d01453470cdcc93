"""A one-node Kubernetes on this machine, from the binaries :mod:`.build` made: etcd, kube-apiserver,
kube-controller-manager, kube-scheduler, containerd (Debian's, with a config of its own) and the kubelet, each
a :class:`~pytest_streamchaos.stack.process.ManagedProcess` (its process group registered with the reaper).

Everything is under one run folder (:class:`~.config.Layout`); the control plane listens on 127.0.0.1 only
(ports from the session's registry), the kubelet on the pods' bridge address. :meth:`Cluster.start` returns once
the node is Ready and the ``default`` service account exists (a pod can be created); :meth:`Cluster.stop`
stops every process and removes what the cluster left on the host (:mod:`.cleanup`), which the reaper also
runs when pytest dies first. Root only (containers, mounts, the bridge, iptables).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pytest_streamchaos.machine import commands
from pytest_streamchaos.poll import poll
from pytest_streamchaos.stack.base import StackError
from pytest_streamchaos.stack.host import Host, current
from pytest_streamchaos.stack.k8s import build, cleanup, config, hostcheck, images, network, pki
from pytest_streamchaos.stack.k8s.api import Api, ApiError
from pytest_streamchaos.stack.process import ManagedProcess, terminate_all
from pytest_streamchaos.stack.service import Service

NODE = "streamchaos-node"
SERVICE_RANGE = "10.96.0.0/24"
SERVICE_IP = "10.96.0.1"
#: the host commands the cluster needs besides the container runtime's (:data:`.hostcheck.RUNTIME`)
NEEDS = {"ip": "apt-get install iproute2", "iptables": "apt-get install iptables",
         "gcc": "apt-get install gcc libc6-dev", "umount": "apt-get install mount"}


def missing() -> str | None:
    """Why a cluster cannot start on this machine (one line naming the fix), or None."""
    if not build.is_built():
        return "Kubernetes is not built; fix: run `python -m pytest_streamchaos.prepare --for k8s` once"
    # root, the runtime, cgroups, overlay, network namespaces; then the cluster's own commands
    return hostcheck.why_not() or hostcheck.missing_program(programs=NEEDS, role="")


class Cluster(Service):
    """The one-node cluster of run folder ``run`` (a short path: unix sockets live in it)."""

    def __init__(self, run: str | os.PathLike, *, host: Host | None = None, start_timeout: float = 240.0,
                 archives: tuple[Path, ...] = ()) -> None:
        """``archives``: OCI image archives imported besides the pause image (the Spark image)."""
        self.archives = archives
        self.layout = config.Layout(Path(run).absolute())
        self.host = host or current()
        self.start_timeout = start_timeout
        self.procs: dict[str, ManagedProcess] = {}
        self.ports: dict[str, int] = {}
        self.timings: dict[str, float] = {}  #: seconds each step of the last start took
        self.left: list[str] = []  #: what the last stop could not remove (empty: nothing)
        self.api: Api | None = None
        self.gateway = ""
        self.subnet = ""
        tag = str(os.getpid())[-6:]
        self.bridge, self.chain = f"sck8s{tag}", f"SC-K8S-{tag}"
        self._cleanup_key = f"k8s-cleanup-{self.layout.run}"
        self._deadline = 0.0

    # -- start ----------------------------------------------------------------------------------------------
    def start(self) -> Cluster:
        if self.procs:
            return self
        why = missing()
        if why:
            raise StackError(f"cannot start the Kubernetes cluster: {why}")
        t0 = self._deadline = time.monotonic()
        self._deadline += self.start_timeout
        lay = self.layout
        if lay.run.exists() and any(lay.run.iterdir()):
            raise StackError(f"the cluster's run folder {lay.run} is not empty; fix: remove it")
        archive = images.pause_archive()
        net = network.free_subnet()
        self.subnet, self.gateway = str(net), str(net.network_address + 1)
        cleanup.record(str(lay.run), bridge=self.bridge, chain=self.chain, socket=str(lay.containerd_socket))
        # the reaper: a pytest killed from now on still gets the host back (given the clean-up's own worst case:
        # the reaper's default 15 s killed it half-way on a loaded host, after the chains, before the run folder)
        self.host.reaper.register_command(self._cleanup_key, [sys.executable, "-I", cleanup.__file__, str(lay.run)],
                                          timeout=cleanup.WORST_CASE_S)
        try:
            self._step("network", self._network)
            self._step("certificates", lambda: pki.make(lay.pki, node=NODE, addresses=["127.0.0.1", self.gateway],
                                                        service_ip=SERVICE_IP))
            self._write_configs()
            self._step("etcd", self._etcd)
            self._step("kube-apiserver", self._apiserver)
            self._step("controllers", self._controllers)
            self._step("containerd", lambda: self._containerd(archive))
            self._step("kubelet", self._kubelet)
            self._step("service account", lambda: self._await(
                "the default service account", lambda: self._exists("/api/v1/namespaces/default/serviceaccounts/"
                                                                     "default"), ()))
        except BaseException:
            self.stop()
            raise
        self.timings["total"] = round(time.monotonic() - t0, 2)
        return self

    def _step(self, name: str, fn: Callable[[], object]) -> None:
        t = time.monotonic()
        fn()
        self.timings[name] = round(time.monotonic() - t, 2)

    def _network(self) -> None:
        network.add_bridge(self.bridge, self.gateway, int(self.subnet.split("/")[1]))
        network.add_forward_chain(self.chain, self.subnet)

    def _write_configs(self) -> None:
        lay = self.layout
        for name in ("etcd", "apiserver", "controller-manager", "scheduler", "kubelet", "kubelet-healthz"):
            self.ports[name] = self.host.ports.free()
        self.ports["etcd-peer"] = self.host.ports.free()
        server = f"https://127.0.0.1:{self.ports['apiserver']}"
        for who, stem in (("admin", "admin"), ("kubelet", "kubelet")):
            lay.kubeconfig(who).write_text(config.kubeconfig(server, lay.pki / "ca.crt", lay.pki / f"{stem}.crt",
                                                             lay.pki / f"{stem}.key", who))
        lay.cni_conf.mkdir(parents=True, exist_ok=True)
        (lay.cni_conf / "10-streamchaos.conflist").write_text(
            config.cni_conflist(lay, self.bridge, self.subnet, self.gateway))
        lay.containerd.mkdir(parents=True, exist_ok=True)
        lowers = config.lowers_oom_scores()  # else every pod's sandbox dies in runc's init
        (lay.containerd / "config.toml").write_text(config.containerd_toml(lay, restrict_oom_score_adj=not lowers))
        lay.kubelet.mkdir(parents=True, exist_ok=True)
        (lay.kubelet / "config.json").write_text(config.kubelet_config(
            lay, address=self.gateway, port=self.ports["kubelet"], healthz_port=self.ports["kubelet-healthz"],
            oom_score_adj=-999 if lowers else 0))
        self.api = Api(server, lay.pki)

    def _launch(self, name: str, argv: list[str]) -> ManagedProcess:
        env = {"PATH": os.environ.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin"), "HOME": str(self.layout.run),
               "TMPDIR": str(self.layout.run / "tmp")}
        (self.layout.run / "tmp").mkdir(exist_ok=True)
        proc = ManagedProcess(argv, env=env, name=name, log_path=self.layout.logs / f"{name}.log",
                              cwd=self.layout.run, host=self.host)
        self.procs[name] = proc
        return proc

    def _await(self, what: str, cond: Callable[[], object], names: tuple[str, ...]) -> None:
        def check() -> bool:
            for n in names:
                p = self.procs[n]
                if not p.alive:
                    raise StackError(f"Kubernetes' {n} exited with code {p.returncode} while waiting for {what} "
                                     f"(log {p.log_path}):\n{p.tail_log(20)}")
            return bool(cond())

        poll(check, max(0.0, self._deadline - time.monotonic()), lambda _: StackError(
            f"Kubernetes: no {what} within {self.start_timeout:.0f}s of the start; logs in {self.layout.logs}"),
            interval=0.1)

    def _bin(self, name: str) -> str:
        return str(build.binary(name))

    def _etcd(self) -> None:
        client, peer = f"http://127.0.0.1:{self.ports['etcd']}", f"http://127.0.0.1:{self.ports['etcd-peer']}"
        self._launch("etcd", [self._bin("etcd"), "--name", "streamchaos", "--data-dir", str(self.layout.etcd),
                              "--listen-client-urls", client, "--advertise-client-urls", client,
                              "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
                              "--initial-cluster", f"streamchaos={peer}", "--unsafe-no-fsync",
                              "--log-level", "warn"])
        self._await("etcd answering", lambda: _http_ok(f"{client}/health"), ("etcd",))

    def _apiserver(self) -> None:
        pk = self.layout.pki
        self._launch("kube-apiserver", [
            self._bin("kube-apiserver"), f"--etcd-servers=http://127.0.0.1:{self.ports['etcd']}",
            "--bind-address=127.0.0.1", f"--secure-port={self.ports['apiserver']}",
            f"--advertise-address={self.gateway}", f"--service-cluster-ip-range={SERVICE_RANGE}",
            f"--tls-cert-file={pk / 'apiserver.crt'}", f"--tls-private-key-file={pk / 'apiserver.key'}",
            f"--client-ca-file={pk / 'ca.crt'}", "--authorization-mode=Node,RBAC",
            # the node's name resolves nowhere (no cluster DNS, and no lookup leaves the machine): its address
            "--kubelet-preferred-address-types=InternalIP",
            f"--kubelet-client-certificate={pk / 'admin.crt'}", f"--kubelet-client-key={pk / 'admin.key'}",
            "--service-account-issuer=https://kubernetes.default.svc",
            f"--service-account-key-file={pk / 'sa.pub'}", f"--service-account-signing-key-file={pk / 'sa.key'}",
            f"--cert-dir={self.layout.run / 'apiserver-certs'}", "--profiling=false", "--allow-privileged=true"])
        assert self.api is not None
        self._await("kube-apiserver ready", lambda: self.api is not None and self.api.answers("/readyz"),
                    ("etcd", "kube-apiserver"))

    def _controllers(self) -> None:
        pk, admin = self.layout.pki, str(self.layout.kubeconfig("admin"))
        common = [f"--kubeconfig={admin}", f"--authentication-kubeconfig={admin}",
                  f"--authorization-kubeconfig={admin}", "--bind-address=127.0.0.1", "--leader-elect=false",
                  "--profiling=false"]
        self._launch("kube-controller-manager", [
            self._bin("kube-controller-manager"), *common, f"--secure-port={self.ports['controller-manager']}",
            f"--service-account-private-key-file={pk / 'sa.key'}", f"--root-ca-file={pk / 'ca.crt'}",
            f"--service-cluster-ip-range={SERVICE_RANGE}", "--use-service-account-credentials=false",
            f"--cert-dir={self.layout.run / 'controller-manager-certs'}"])
        self._launch("kube-scheduler", [
            self._bin("kube-scheduler"), *common, f"--secure-port={self.ports['scheduler']}",
            f"--cert-dir={self.layout.run / 'scheduler-certs'}"])

    def _containerd(self, archive: Path) -> None:
        lay = self.layout
        self._launch("containerd", ["containerd", "--config", str(lay.containerd / "config.toml")])
        self._await("containerd's socket", lambda: self._ctr("version").returncode == 0, ("containerd",))
        for image in (archive, *self.archives):
            p = self._ctr("images", "import", str(image))
            commands.check(p, error=StackError, fix=f"the image {image} is an OCI archive made here: remove it to "
                                                    f"have it made again")

    def _ctr(self, *args: str) -> Any:
        return commands.completed(["ctr", "--address", str(self.layout.containerd_socket), "--namespace", "k8s.io",
                                   *args], timeout=120, error=StackError)

    def _kubelet(self) -> None:
        lay = self.layout
        self._launch("kubelet", [
            self._bin("kubelet"), f"--config={lay.kubelet / 'config.json'}",
            f"--kubeconfig={lay.kubeconfig('kubelet')}", f"--root-dir={lay.kubelet}",
            f"--cert-dir={lay.kubelet / 'pki'}", f"--hostname-override={NODE}", f"--node-ip={self.gateway}"])
        self._await("the node Ready", self.node_ready, ("containerd", "kubelet", "kube-apiserver"))

    # -- state ----------------------------------------------------------------------------------------------
    def _exists(self, path: str) -> bool:
        try:
            self._api().get(path)
        except ApiError as exc:
            if exc.status in (0, 404):
                return False
            raise
        return True

    def _api(self) -> Api:
        if self.api is None:
            raise StackError("the Kubernetes cluster is not started")
        return self.api

    def node_ready(self) -> bool:
        """Whether the node reports Ready now."""
        try:
            node = self._api().get(f"/api/v1/nodes/{NODE}")
        except ApiError:
            return False
        return any(c.get("type") == "Ready" and c.get("status") == "True"
                   for c in node.get("status", {}).get("conditions", []))

    def kubectl(self, *args: str, timeout: float = 60.0) -> str:
        """``kubectl <args>`` as the admin; its output (:class:`StackError` when it fails)."""
        return commands.run([self._bin("kubectl"), f"--kubeconfig={self.layout.kubeconfig('admin')}", *args],
                            timeout=timeout, error=StackError)

    @property
    def alive(self) -> bool:
        return bool(self.procs) and all(p.alive for p in self.procs.values())

    # -- stop -----------------------------------------------------------------------------------------------
    def stop(self) -> None:
        """Stop the kubelet, then the rest together (SIGTERM, SIGKILL after 10 s), then remove the pods'
        processes, mounts, cgroups, the bridge and the chains, the run folder (:mod:`.cleanup`). What could
        not be removed is in :attr:`left`. Idempotent."""
        order = ["kubelet"]  # first: it would restart what the cleanup kills
        for name in order:
            if name in self.procs:
                self.procs[name].terminate(timeout=10)
        terminate_all([p for n, p in self.procs.items() if n not in order], timeout=10)
        self.procs.clear()
        self.api = None
        if self.layout.run.exists():
            self.left = cleanup.clean(str(self.layout.run))
        if not self.left:  # else the reaper tries once more when pytest exits
            try:
                self.host.reaper.unregister_command(self._cleanup_key)
            except Exception:  # a gone watchdog must not break teardown
                pass


def _http_ok(url: str) -> bool:
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=2) as resp:
            return resp.status == 200
    except OSError:
        return False
