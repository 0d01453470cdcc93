"""Kubernetes as the stack's Spark cluster (:class:`~..base.SparkCluster`, the ``k8s`` cluster manager): the
one-node :class:`~.cluster.Cluster` started with the Spark image (:mod:`.spark_image`) imported, and the user's
job submitted ``spark-submit --master k8s://https://127.0.0.1:<port>`` in client mode.

What the interface's words mean here: the *worker* is the node (its kubelet), there is no *master* to kill (the
control plane is the cluster's own), an *executor* is an executor pod of a job (found by the labels Spark puts on
it, ``spark-app-selector`` and ``spark-role=executor``), killed by deleting the pod through the API server
(:class:`~..capabilities.PodDelete`, :class:`~..capabilities.ExecutorKill`).

The network (docs/kubernetes.md, "Spark on it"): the driver binds the cluster bridge's address on this host
(``spark.driver.host``), which every pod reaches; the executors reach the job's Kafka through the relay
(:mod:`.relay` on the host, the image's entrypoint in the pod): each port of the job's Kafka links
(``127.0.0.1:<port>``, Toxiproxy's, and the fixed port of a job that hard-codes ``localhost:9092``) is the same
port of the pod's loopback. Nothing is routed off the machine.
"""

from __future__ import annotations

import functools
import os
import signal
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_streamchaos.errors import LaunchError, StackError
from pytest_streamchaos.poll import poll
from pytest_streamchaos.stack.base import Endpoint, Executor, LaunchOptions, LinkScope, Node, SparkApp, SparkCluster
from pytest_streamchaos.stack.driver import command
from pytest_streamchaos.stack.driver.job import SparkJob
from pytest_streamchaos.stack.driver.launcher import DriverSite, SubmitLauncher, stop_jobs
from pytest_streamchaos.stack.host import Host
from pytest_streamchaos.stack.host import current as current_host
from pytest_streamchaos.stack.k8s import spark_image
from pytest_streamchaos.stack.k8s.api import Api, ApiError
from pytest_streamchaos.stack.k8s.build import KUBERNETES_VERSION
from pytest_streamchaos.stack.k8s.cluster import NODE, Cluster
from pytest_streamchaos.stack.k8s.disruption import PodDisruptions
from pytest_streamchaos.stack.k8s.driver_job import K8sDriverJob
from pytest_streamchaos.stack.k8s.relay import Relay
from pytest_streamchaos.stack.k8s.watcher import NAMESPACE, PodWatcher, Timeline, pods
from pytest_streamchaos.stack.local.placement import LocalPlacement

if TYPE_CHECKING:
    from pytest_streamchaos.stack.fixtures import Stacks

#: the label every pod of a job carries (its value the job's tag): the watcher's and the clean-up's selector
JOB_LABEL = "streamchaos-job"
#: the service account the driver acts as (its token in the run folder)
DRIVER_ACCOUNT = "streamchaos-spark"
EXECUTORS = "spark-role=executor"
#: what a job on Kubernetes gets over the driver defaults: two executor pods, no dynamic allocation (a lost one
#: is replaced), a small CPU request (two pods fit the 2-core node beside the control plane)
K8S_CONF: dict[str, str] = {
    "spark.executor.instances": "2",
    "spark.dynamicAllocation.enabled": "false",
    "spark.kubernetes.namespace": NAMESPACE,
    "spark.kubernetes.container.image.pullPolicy": "Never",
    "spark.kubernetes.executor.request.cores": "250m",
    "spark.kubernetes.executor.deleteOnTermination": "true",
    # the executors' Python workers: pyspark's own daemon (the image has pyspark, not this plugin)
    "spark.python.daemon.module": "pyspark.daemon",
}


@dataclass
class PodExecutor:
    """An executor as its pod (:class:`~..base.Executor`), deleted through the API server."""

    name: str
    cluster: K8sSparkCluster

    def __str__(self) -> str:
        return f"executor pod {self.name}"

    @property
    def id(self) -> str:
        return self.name

    @property
    def pid(self) -> int | None:
        return None  # a process in the pod's namespaces; the API is the way to it

    @property
    def state(self) -> str | None:
        """``running`` while the pod exists and no deletion was asked for, else None."""
        return "running" if self.name in self.cluster.live_pods(EXECUTORS) else None

    @property
    def alive(self) -> bool:
        return self.state is not None

    def kill(self, sig: int = signal.SIGKILL) -> None:
        """The pod deleted: at once for SIGKILL (grace 0), with its grace period (SIGTERM first) otherwise."""
        if sig not in (signal.SIGKILL, signal.SIGTERM):
            raise StackError(f"{signal.Signals(sig).name} to an executor pod: Kubernetes' API deletes a pod but "
                             "cannot freeze it; pause an executor on the standalone cluster")
        self.cluster.delete_pod(self.name, grace=0 if sig == signal.SIGKILL else None)


@dataclass(frozen=True)
class KubeNode:
    """The cluster's one node (its kubelet), as the stack's worker."""

    cluster: K8sSparkCluster

    @property
    def name(self) -> str:
        return f"node {NODE}"

    @property
    def alive(self) -> bool:
        return self.cluster.kube.node_ready()

    def endpoint(self) -> Endpoint:
        return Endpoint(self.name, "worker", self.cluster.kube.gateway, {"kubelet": self.cluster.kube.ports["kubelet"]})


class K8sSparkCluster(PodDisruptions, SparkCluster):
    """The one-node Kubernetes behind the stack's interface (see the module docstring). ``kafka_ports``: the
    ports of the job's Kafka links now (asked at each submission, relayed to the pods)."""

    def __init__(self, run: str | os.PathLike, *, kafka_ports: Callable[[], Sequence[int]] = tuple,
                 java_home: str | None = None, start_timeout: float = 240.0, host: Host | None = None) -> None:
        self.host = host or current_host()
        self.java_home = java_home
        self.kube = Cluster(run, host=self.host, start_timeout=start_timeout)
        self.kafka_ports = kafka_ports
        self.relay: Relay | None = None
        self.launchers: list[K8sSubmitLauncher] = []

    @functools.cached_property
    def image(self) -> spark_image.Sources:
        """The Spark image of this host's JDK, Python and pyspark (what the pods run)."""
        return spark_image.sources(self.java_home)

    @property
    def api(self) -> Api:
        if self.kube.api is None:
            raise StackError("the Kubernetes cluster is not started")
        return self.kube.api

    # -- shape ---------------------------------------------------------------------------------
    @property
    def manager(self) -> str:
        return "k8s"

    @property
    def master_url(self) -> str:
        return f"k8s://https://127.0.0.1:{self.kube.ports['apiserver']}"

    @property
    def driver_host(self) -> str:
        """The bridge's address on this host: the driver binds it, every pod reaches it."""
        return self.kube.gateway

    @property
    def effective_conf(self) -> Mapping[str, str]:
        return {"kubernetes": f"v{KUBERNETES_VERSION}", "image": self.image.image, "node": NODE,
                "pod_subnet": self.kube.subnet}

    @property
    def link_scope(self) -> LinkScope:
        return LocalPlacement(self.host).link_scope

    def link_sides(self) -> list[tuple[str, str]]:
        return []

    @property
    def workers(self) -> Sequence[Node]:
        return [KubeNode(self)]

    @property
    def masters(self) -> Sequence[Node]:
        return []

    def endpoints(self) -> list[Endpoint]:
        return [w.endpoint() for w in self.workers]

    def alive_workers(self) -> list[dict[str, Any]]:
        return [{"id": NODE, "host": self.kube.gateway, "port": self.kube.ports.get("kubelet")}] \
            if self.kube.api is not None and self.kube.node_ready() else []

    # -- start / stop --------------------------------------------------------------------------
    def start(self) -> None:
        self.kube.archives = (spark_image.archive(self.image),)  # StackError naming prepare --k8s when missing
        self.kube.start()
        try:
            self._driver_identity()
        except BaseException:
            self.kube.stop()
            raise
        self.relay = Relay(self.kube.gateway)

    @property
    def token_file(self) -> Path:
        return self.kube.layout.pki / "spark-driver.token"

    def _driver_identity(self) -> None:
        """The driver's identity for its calls to the API server: a service account bound to the ``edit`` role (pods,
        config maps, services of the namespace) and a token of it in a file. Not the admin's client certificate:
        Spark's Kubernetes client (fabric8) reads no EC private key ("Invalid DER: object is not integer")."""
        api = self.api
        api.call("POST", f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts",
                 {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": DRIVER_ACCOUNT}})
        api.call("POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": DRIVER_ACCOUNT},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"},
            "subjects": [{"kind": "ServiceAccount", "name": DRIVER_ACCOUNT, "namespace": NAMESPACE}]})
        answer = api.call("POST", f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts/{DRIVER_ACCOUNT}/token", {
            "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": 86400}})
        fd = os.open(self.token_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(answer["status"]["token"])

    def stop(self) -> None:
        for launcher in self.launchers:
            try:
                launcher.stop_all(timeout=15)
            except Exception:  # the cluster goes regardless
                pass
        if self.relay is not None:
            self.relay.stop()
            self.relay = None
        self.kube.stop()

    def heal(self, timeout: float = 60.0) -> None:
        self.wait_for_workers(1, timeout)

    def wait_for_workers(self, k: int, timeout: float = 60.0) -> None:
        poll(lambda: len(self.alive_workers()) >= min(k, 1), timeout, lambda _: TimeoutError(
            f"Kubernetes: the node is not Ready after {timeout:.0f}s"), interval=0.2)

    # -- pods ----------------------------------------------------------------------------------
    def live_pods(self, selector: str) -> list[str]:
        """The pods of ``selector`` that exist and are not being deleted, by creation."""
        try:
            found = pods(self.api, selector)
        except ApiError:
            return []
        found.sort(key=lambda p: p["metadata"].get("creationTimestamp", ""))
        return [p["metadata"]["name"] for p in found if not p["metadata"].get("deletionTimestamp")]

    def running_pods(self, selector: str) -> list[str]:
        """The pods of ``selector`` Running with their container ready."""
        try:
            found = pods(self.api, selector)
        except ApiError:
            return []
        return [p["metadata"]["name"] for p in found if not p["metadata"].get("deletionTimestamp")
                and p.get("status", {}).get("phase") == "Running"
                and all(c.get("ready") for c in p["status"].get("containerStatuses") or [{}])]

    def delete_pod(self, name: str, grace: float | None = None) -> float:
        """``DELETE`` the pod (``grace``: its ``gracePeriodSeconds``; None: the pod's own); when it was asked."""
        body = {"kind": "DeleteOptions", "apiVersion": "v1"}
        if grace is not None:
            body["gracePeriodSeconds"] = int(grace)  # type: ignore[assignment]
        at = time.time()
        self.api.call("DELETE", f"/api/v1/namespaces/{NAMESPACE}/pods/{name}", body)
        return at

    def pod_gone(self, name: str) -> bool:
        try:
            self.api.get(f"/api/v1/namespaces/{NAMESPACE}/pods/{name}")
        except ApiError as exc:
            return exc.status == 404
        return False

    def executor_pods(self) -> list[str]:
        """The executor pods of every running job launched here, oldest first."""
        return [name for job in self._jobs() for name in self.live_pods(f"{EXECUTORS},{JOB_LABEL}={job.tag}")]

    def replacement_pod(self, than: Sequence[str]) -> str | None:
        """An executor pod Running now that is none of ``than``."""
        return next((n for job in self._jobs() for n in self.running_pods(f"{EXECUTORS},{JOB_LABEL}={job.tag}")
                     if n not in than), None)

    def _jobs(self) -> list[K8sJob | K8sDriverJob]:
        return [j for launcher in self.launchers for j in [*launcher.jobs, *launcher.driver_jobs]
                if isinstance(j, (K8sJob, K8sDriverJob)) and j.alive]

    # -- executors -----------------------------------------------------------------------------
    def executors(self, i: int) -> Sequence[Executor]:
        if i != 0:
            raise IndexError(f"index={i}: the Kubernetes cluster has one node")
        return [PodExecutor(n, self) for n in self.executor_pods()]

    def app_executors(self, app_id: str) -> Sequence[Executor]:
        return [PodExecutor(n, self) for n in self.live_pods(f"{EXECUTORS},spark-app-selector={app_id}")]

    def kill_executor(self, executor: Executor, sig: int = signal.SIGKILL) -> None:
        """Its pod deleted through the API server (grace 0 for SIGKILL)."""
        executor.kill(sig)

    def executor_state(self, executor: Executor) -> str | None:
        return executor.state

    # -- the job -------------------------------------------------------------------------------
    def driver_site(self) -> DriverSite:
        return DriverSite(master_url=self.master_url, driver_host=self.driver_host, host=self.host,
                          executors=self.app_executors, deploy_modes=("client", "cluster"))

    def launcher(self, workdir: str | os.PathLike, options: LaunchOptions | None = None) -> K8sSubmitLauncher:
        launcher = K8sSubmitLauncher(self, self.driver_site(), workdir, options)
        self.launchers.append(launcher)
        return launcher

    def submit_conf(self, workdir: Path, tag: str) -> dict[str, str]:
        """The conf of a submission: the image, the API server's credentials (a service account's token),
        the job's label, the relay of its Kafka ports, and the launcher's folder mounted at its own path in every
        executor pod (a checkpoint's state store and a file sink, written by executors, land where the driver
        reads them)."""
        pki = self.kube.layout.pki
        ports = sorted({int(p) for p in self.kafka_ports()})
        if self.relay is not None:
            for port in ports:
                self.relay.add(port)
        out = {**K8S_CONF,
               "spark.kubernetes.container.image": self.image.image,
               "spark.kubernetes.authenticate.caCertFile": str(pki / "ca.crt"),
               "spark.kubernetes.authenticate.oauthTokenFile": str(self.token_file),
               f"spark.kubernetes.executor.label.{JOB_LABEL}": tag,
               "spark.pyspark.python": str(self.image.python),
               "spark.kubernetes.executor.volumes.hostPath.streamchaos-work.mount.path": str(workdir),
               "spark.kubernetes.executor.volumes.hostPath.streamchaos-work.mount.readOnly": "false",
               "spark.kubernetes.executor.volumes.hostPath.streamchaos-work.options.path": str(workdir)}
        if ports:
            out["spark.executorEnv.STREAMCHAOS_RELAY"] = f"{self.kube.gateway}:{','.join(map(str, ports))}"
        return out


class K8sJob(SparkJob):
    """spark-submit's job (the driver here, client mode) with its pods' events on its timeline and its executor
    pods deleted when it stops (a driver killed by SIGKILL does not delete them itself)."""

    cluster: K8sSparkCluster
    tag: str
    _watcher: PodWatcher | None = None

    def start(self) -> K8sJob:
        super().start()
        if self._watcher is None:
            self._watcher = PodWatcher(self.cluster.api, f"{JOB_LABEL}={self.tag}",
                                       Timeline(self.timeline).record).start()
        return self

    def stop(self, timeout: float = 30.0) -> None:
        try:
            super().stop(timeout)
        finally:
            if self._watcher is not None:
                self._watcher.stop()
                self._watcher = None
            try:
                for name in self.cluster.live_pods(f"{JOB_LABEL}={self.tag}"):
                    self.cluster.delete_pod(name, grace=0)
            except (ApiError, StackError):
                pass  # the cluster is gone: its pods with it


class K8sSubmitLauncher(SubmitLauncher):
    """The shared launcher with Kubernetes' conf (:meth:`K8sSparkCluster.submit_conf`), client mode only."""

    def __init__(self, cluster: K8sSparkCluster, site: DriverSite, workdir: str | os.PathLike,
                 options: LaunchOptions | None = None) -> None:
        super().__init__(site, workdir, options)
        self.cluster = cluster
        self._tag = ""
        self.driver_jobs: list[K8sDriverJob] = []  #: cluster mode's (stack/k8s/driver_job.py)

    @property
    def defaults(self) -> Mapping[str, str]:
        return {**super().defaults, **K8S_CONF}

    def prepare(self, app: SparkApp) -> K8sJob | K8sDriverJob:  # type: ignore[override]  # cluster mode's too
        if app.deploy_mode not in ("client", "cluster"):
            raise LaunchError(f"deploy_mode={app.deploy_mode!r} on Kubernetes: use 'client' (the driver here, "
                              "executors as pods) or 'cluster' (the driver a pod too, restarted by a Job)")
        own = {k for k in app.conf if k.startswith("spark.kubernetes.")}
        for key, have in (("spark.kubernetes.namespace", NAMESPACE),
                          ("spark.kubernetes.container.image", self.cluster.image.image)):
            if key in own and app.conf[key] != have:
                raise LaunchError(f"{app.name} sets {key}={app.conf[key]!r}, which the test cluster lacks (it has "
                                  f"{have!r}); fix: leave {key} out of the job's conf in the test")
        self._tag = f"streamchaos-{os.urandom(6).hex()}"
        job = super().prepare(app)
        if app.deploy_mode == "cluster":
            return self._driver_job(job, app)
        job.__class__ = K8sJob  # the shared launcher makes a SparkJob; this one's jobs watch their pods
        assert isinstance(job, K8sJob)
        job.cluster, job.tag = self.cluster, self._tag
        return job

    def _driver_job(self, inner: SparkJob, app: SparkApp) -> K8sDriverJob:
        """Cluster mode: the shared launcher's job (never started) as a Kubernetes Job's driver pod."""
        job = K8sDriverJob(inner, self.cluster, self._tag, JOB_LABEL, DRIVER_ACCOUNT, app.env)
        self.driver_jobs.append(job)
        return job

    def stop_all(self, timeout: float = 30.0) -> None:
        stop_jobs([*self.driver_jobs, *self.jobs], timeout)

    def _effective_conf(self, app: SparkApp, dirs: command.JobDirs, pythonpath: str, home: Path,
                        java: str | None) -> dict[str, str]:
        effective = super()._effective_conf(app, dirs, pythonpath, home, java)
        own = dict(app.conf)
        for key, value in self.cluster.submit_conf(self.workdir.absolute(), self._tag).items():
            if key not in own:
                effective[key] = value
        # the executors' JVM options name this host's class-data archives, which the image lacks
        opts = effective.get("spark.executor.extraJavaOptions", "").split()
        effective["spark.executor.extraJavaOptions"] = " ".join(
            o for o in opts if not o.startswith(("-XX:SharedArchiveFile", "-Xshare")))
        return effective


def session_cluster(stacks: Stacks, backend: str, ha: bool) -> SparkCluster:
    """Kubernetes as the session's Spark cluster (the ``k8s`` manager's factory): the one-node cluster, started on
    first use, its pods given the ports of the session's Kafka. Local backend only."""
    import pytest

    if backend == "docker":
        pytest.skip("Kubernetes runs on the local backend only (its node is this host); run this test with "
                    "--chaos-backend local")
    if ha:
        raise pytest.UsageError("@chaos(ha=True) is Spark standalone's two masters; leave ha out with spark='k8s'")
    s = stacks.settings

    def kafka_ports() -> list[int]:
        kafka = stacks.kafka(backend)
        ports = {int(a.rsplit(":", 1)[1]) for a in kafka.job_bootstrap_servers.split(",") if ":" in a}
        ports |= {p.listen_port for p in getattr(kafka, "job_links", lambda: [])()}
        if s.kafka_port:
            ports.add(int(s.kafka_port))
        return sorted(ports)

    run = Path(f"/tmp/sck8s-{os.getpid()}")  # short: containerd's sockets live in it
    cluster = K8sSparkCluster(run, kafka_ports=kafka_ports, java_home=s.java_home or None,
                              start_timeout=max(s.start_timeout, 240.0), host=stacks.host)
    return stacks.start(cluster)
