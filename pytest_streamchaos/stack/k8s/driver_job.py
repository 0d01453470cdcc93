"""Cluster mode on Kubernetes (issue 51): the driver a pod too, owned by a Kubernetes Job that recreates it.

``JobSetup(deploy_mode="cluster")`` with the ``k8s`` manager. The driver pod runs what Spark's own cluster-mode
driver pod runs (its ``entrypoint.sh driver``): ``spark-submit --deploy-mode client`` inside the pod, bound to the
pod's address, naming its own pod (``spark.kubernetes.driver.pod.name``: the executor pods are owned by it and go
with it). Not ``spark-submit --deploy-mode cluster`` from the host: that makes a bare pod, which nothing recreates
when it is deleted; a controller is how users get a restart (the Spark operator's ``restartPolicy``, a Job's
``backoffLimit``). Here the controller is a ``batch/v1`` Job: ``backoffLimit`` restarts, ``restartPolicy: Never``
(each restart a new pod, on the timeline), ``podReplacementPolicy: Failed`` (a new driver only once the old one
is gone: two drivers never share a checkpoint).

What the pod needs, each at its own path on this host (hostPath volumes): the launcher's folder (the driver's
working directory, its event log -- which the run's observers read as in client mode -- and Spark's scratch
space), the job's folder (its script and the modules and data beside it), the connector's jars, the folders
of the job's absolute-path arguments (its checkpoint), and the API server's CA and the driver's token. The API
server listens on the loopback only: the cluster's relay adds its port on the bridge (the certificate names the
bridge's address), Kafka's ports as for the executors. The JVM's command line is the one Spark's launcher
(``org.apache.spark.launcher.Main``, what ``spark-submit`` runs) builds here, with this host's paths, which are
the image's. The pods' output is followed through the API server into the job's ``driver.log``.
"""

from __future__ import annotations

import threading
import time
import urllib.parse
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from pytest_streamchaos.errors import LaunchError, StackError
from pytest_streamchaos.events import Kind
from pytest_streamchaos.machine import commands
from pytest_streamchaos.observe.progress import SparkProgress
from pytest_streamchaos.poll import poll
from pytest_streamchaos.records import TimelineEvent
from pytest_streamchaos.stack.base import Launch
from pytest_streamchaos.stack.driver.conf import spark_home
from pytest_streamchaos.stack.driver.job import SparkJob, WrapsSparkJob, last_exception
from pytest_streamchaos.stack.k8s import spark_image
from pytest_streamchaos.stack.k8s.api import Api, ApiError
from pytest_streamchaos.stack.k8s.cluster import Cluster
from pytest_streamchaos.stack.k8s.relay import Relay
from pytest_streamchaos.stack.k8s.watcher import NAMESPACE, PodWatcher, Timeline, pods


class DriverHost(Protocol):
    """What a driver's Job needs of the cluster it runs on (``spark.K8sSparkCluster``; a protocol here, not that
    class, which makes these jobs: no import back)."""

    kube: Cluster
    relay: Relay | None

    @property
    def api(self) -> Api: ...

    @property
    def image(self) -> spark_image.Sources: ...

    @property
    def token_file(self) -> Path: ...

    def submit_conf(self, workdir: Path, tag: str) -> dict[str, str]: ...

    def live_pods(self, selector: str) -> list[str]: ...

    def running_pods(self, selector: str) -> list[str]: ...

    def delete_pod(self, name: str, grace: float | None = None) -> float: ...

    def pod_gone(self, name: str) -> bool: ...

DRIVERS = "spark-role=driver"
#: restarts the Job allows (its ``backoffLimit``): enough for a test's faults, not a crash loop's
BACKOFF_LIMIT = 4
#: what the pod's environment gets of spark-submit's (the rest is this host's)
_ENV_KEYS = ("PYTHONPATH", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "PYTHONUNBUFFERED")
#: the JVM options of this host only (its class-data archives): not in the image
_HOST_ONLY_OPTS = ("-XX:SharedArchiveFile", "-Xshare")
_JOBS = f"/apis/batch/v1/namespaces/{NAMESPACE}/jobs"


def mounts(paths: Sequence[Path]) -> list[Path]:
    """The folders to mount for ``paths``: each path's nearest existing folder (itself when it is one), two levels
    deep at least (no ``/`` nor ``/tmp`` whole), without one that is inside another of them."""
    found = set()
    for p in paths:
        p = Path(p).absolute()
        while not p.is_dir() and p != p.parent:
            p = p.parent
        if len(p.parts) > 2:
            found.add(p)
    return sorted(p for p in found if not any(q in p.parents for q in found))


def absolute_paths(argv: Sequence[str], conf: Mapping[str, str]) -> list[Path]:
    """The host paths a submission names: its absolute-path arguments, the comma lists of ``--py-files`` /
    ``--files``, and ``spark.jars``' files."""
    out = []
    for arg in [*argv, *conf.get("spark.jars", "").split(",")]:
        for part in arg.split(","):
            part = part.removeprefix("file://")
            if part.startswith("/") and not part.startswith("//"):
                out.append(Path(part))
    return out


def pod_submit_args(argv: Sequence[str], master: str, tail: int, python: str) -> list[str]:
    """spark-submit's arguments (``argv`` without the program) for the driver in the pod: ``master``, client mode
    in the pod, the driver bound to the pod's address and naming its pod (``$(POD_IP)``, ``$(POD_NAME)``: the
    kubelet puts the pod's values in), and this host's class-data archives out of its JVM options. ``tail``: how
    many of ``argv``'s last items are the script and its arguments (kept as they are); ``python``: the image's."""
    pinned = {"spark.driver.host": "$(POD_IP)", "spark.driver.bindAddress": "$(POD_IP)",
              "spark.kubernetes.driver.pod.name": "$(POD_NAME)", "spark.pyspark.driver.python": python,
              "spark.pyspark.python": python}
    out, i, end = [], 1, len(argv) - tail
    while i < end:
        arg = argv[i]
        if arg in ("--master", "--deploy-mode") and i + 1 < len(argv):
            out += [arg, master if arg == "--master" else "client"]
            i += 2
            continue
        if arg == "--conf" and i + 1 < len(argv):
            key, _, value = argv[i + 1].partition("=")
            if key.endswith("extraJavaOptions"):
                value = " ".join(o for o in value.split() if not o.startswith(_HOST_ONLY_OPTS))
            if key not in pinned:
                out += ["--conf", f"{key}={value}"]
            i += 2
            continue
        out.append(arg)
        i += 1
    # spark-submit's options may come in any order before the script: the pod's own first
    return [a for key, value in pinned.items() for a in ("--conf", f"{key}={value}")] + out + list(argv[end:])


def _scala(home: Path) -> str:
    """The Scala version of Spark's jars (``spark-core_2.13-...``), which ``bin/load-spark-env.sh`` sets for the
    launcher."""
    core = next(home.glob("jars/spark-core_*.jar"), None)
    return core.name.split("_", 1)[1].split("-", 1)[0] if core else "2.13"


def jvm_command(submit_args: Sequence[str], env: Mapping[str, str]) -> list[str]:
    """The driver JVM's command line as Spark's launcher builds it for ``spark-submit <submit_args>`` (the module
    options, ``-Xmx`` of ``spark.driver.memory``, the class path): ``launcher.Main`` prints it, NUL-separated, as
    ``bin/spark-class`` reads it. This host's class-data archives are left out (not in the image)."""
    home = spark_home()
    java = str(Path(env["JAVA_HOME"]) / "bin" / "java") if env.get("JAVA_HOME") else "java"
    out = commands.run([java, "-Xmx128m", "-cp", f"{home}/jars/*", "org.apache.spark.launcher.Main",
                        "org.apache.spark.deploy.SparkSubmit", *submit_args], timeout=60, error=LaunchError,
                       env={**env, "SPARK_HOME": str(home), "SPARK_SCALA_VERSION": _scala(home)},
                       fix="the driver pod's command is Spark's launcher's: check the job's conf")
    words = [p.lstrip("\n") for p in out.split("\0")[:-1]]  # the launcher starts its answer with a new line
    return [w for w in words if w and not w.startswith(_HOST_ONLY_OPTS)]


def manifest(*, name: str, tag: str, label: str, image: str, account: str, command: Sequence[str], workdir: Path,
             env: Mapping[str, str], folders: Sequence[Path], files: Sequence[Path]) -> dict[str, Any]:
    """The driver's ``batch/v1`` Job (see the module docstring)."""
    paths = [(f"host-{i}", p, "Directory") for i, p in enumerate(folders)]
    paths += [(f"file-{i}", p, "File") for i, p in enumerate(files)]
    volumes = [{"name": n, "hostPath": {"path": str(p), "type": t}} for n, p, t in paths]
    mounted = [{"name": n, "mountPath": str(p), "readOnly": t == "File"} for n, p, t in paths]
    pod_env = [{"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
               {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
               {"name": "SPARK_LOCAL_IP", "value": "$(POD_IP)"},
               *({"name": k, "value": v} for k, v in env.items())]
    labels = {label: tag, "spark-role": "driver"}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "labels": {label: tag}},
            "spec": {"backoffLimit": BACKOFF_LIMIT, "podReplacementPolicy": "Failed",
                     "template": {"metadata": {"labels": labels}, "spec": {
                         "restartPolicy": "Never", "serviceAccountName": account,
                         "automountServiceAccountToken": False, "enableServiceLinks": False,
                         "containers": [{"name": "spark-kubernetes-driver", "image": image,
                                         "imagePullPolicy": "Never", "args": list(command),
                                         "workingDir": str(workdir), "env": pod_env,
                                         "resources": {"requests": {"cpu": "250m"}},
                                         "volumeMounts": mounted}],
                         "volumes": volumes}}}}


class K8sDriverJob(WrapsSparkJob):
    """The user's job in cluster mode (:class:`~..base.JobHandle`): a Kubernetes Job whose pod is the driver.
    ``inner``: the shared launcher's job of the same app (its folder, conf and command line; never started here).
    A *launch* is a driver pod; ``alive`` while the Job is active (between a driver pod's end and its
    replacement too: the controller restarts it, as YARN's next attempt does in its cluster mode)."""

    def __init__(self, inner: SparkJob, cluster: DriverHost, tag: str, label: str, account: str,
                 env: Mapping[str, str]) -> None:
        self.inner, self.cluster, self.tag, self.label, self.account = inner, cluster, tag, label, account
        self.env = {**{k: inner.env[k] for k in _ENV_KEYS if k in inner.env}, **env}
        self.deploy_mode = "cluster"
        self.job_name = f"{tag}-driver"
        self.launches: list[Launch] = []
        self._events: list[TimelineEvent] = []
        self._record = Timeline(self._events).record
        self._by_pod: dict[str, Launch] = {}
        self._followed: set[str] = set()
        self._log_lock = threading.Lock()
        self._watcher: PodWatcher | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._ended: int | None = None
        self._progress: SparkProgress | None = None

    def __repr__(self) -> str:
        return f"<K8sDriverJob {self.name} cluster launches={len(self.launches)}>"

    @property
    def timeline(self) -> Sequence[TimelineEvent]:
        """The driver pods' launches, kills and stop, and Kubernetes' events of the job's pods and of its Job."""
        return sorted(self._events, key=lambda e: e.t)

    @property
    def progress(self) -> SparkProgress:
        if self._progress is None:
            self._progress = SparkProgress(self.event_log_dir)
        return self._progress

    @property
    def pid(self) -> int | None:
        return None  # the driver is a process of a pod

    # -- the Job -------------------------------------------------------------------------------
    def _status(self) -> dict[str, Any] | None:
        try:
            return dict(self.cluster.api.get(f"{_JOBS}/{self.job_name}").get("status", {}))
        except ApiError as exc:
            if exc.status == 404:
                return None
            raise

    @property
    def alive(self) -> bool:
        """The Job exists and is neither complete nor failed (its controller runs or restarts the driver)."""
        if self._ended is not None:
            return False
        try:
            status = self._status()
        except ApiError:
            return True  # the API server between answers: the Job is what it was
        if status is None:
            return False
        done = {c["type"] for c in status.get("conditions") or [] if c.get("status") == "True"}
        if done & {"Complete", "Failed", "SuccessCriteriaMet", "FailureTarget"}:
            self._ended = 0 if done & {"Complete", "SuccessCriteriaMet"} else self._last_exit() or 1
            return False
        return True

    @property
    def returncode(self) -> int | None:
        """None while the Job is active; then 0 when it completed, else the last driver's exit code (1 if none)."""
        return None if self.alive else self._ended

    def _last_exit(self) -> int | None:
        return self.launches[-1].returncode if self.launches else None

    def start(self) -> K8sDriverJob:
        """Create the Job (a new submission; the driver pods its controller makes are the launches)."""
        if self.launches and self.alive:
            raise LaunchError(f"job {self.name} is already running (Job {self.job_name}); stop() it first")
        self._delete_job(wait=30.0)
        self._ended = None
        self.cluster.api.call("POST", _JOBS, self._manifest())
        if self._watcher is None:
            self._watcher = PodWatcher(self.cluster.api, f"{self.label}={self.tag}", self._record).start()
            self._stop.clear()
            self._thread = threading.Thread(target=self._follow_drivers, daemon=True, name="streamchaos-k8s-driver")
            self._thread.start()
        return self

    def _manifest(self) -> dict[str, Any]:
        cluster = self.cluster
        api_port = cluster.kube.ports["apiserver"]
        if cluster.relay is not None:  # the API server's port on the bridge, for the driver pod
            cluster.relay.add(api_port)
        conf = cluster.submit_conf(Path(self.inner.workdir).parent, self.tag)
        python = str(cluster.image.python)  # the image's (this host's resolved): no link to it is in the image
        env = {**self.env, "PYSPARK_PYTHON": python, "PYSPARK_DRIVER_PYTHON": python}
        if "spark.executorEnv.STREAMCHAOS_RELAY" in conf:
            env["STREAMCHAOS_RELAY"] = conf["spark.executorEnv.STREAMCHAOS_RELAY"]
        args = pod_submit_args(self.inner.argv, f"k8s://https://{cluster.kube.gateway}:{api_port}",
                               tail=len(self.inner.args) + 1, python=python)
        command = jvm_command(args, self.inner.env)
        token, ca = cluster.token_file, cluster.kube.layout.pki / "ca.crt"
        folders = mounts([Path(self.inner.workdir).parent, self.script.parent,
                          *absolute_paths(self.inner.argv, self.effective_conf)])
        return manifest(name=self.job_name, tag=self.tag, label=self.label, image=cluster.image.image,
                        account=self.account, command=command, workdir=Path(self.inner.workdir), env=env,
                        folders=[f for f in folders if f not in (token.parent, ca.parent)], files=[token, ca])

    def _delete_job(self, wait: float) -> None:
        """The Job gone (its pods left to :meth:`stop`'s deletions); ``wait``: until the API server has none."""
        try:
            self.cluster.api.call("DELETE", f"{_JOBS}/{self.job_name}",
                                  {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Orphan"})
        except ApiError as exc:
            if exc.status != 404:
                raise
            return
        poll(lambda: self._status() is None, wait, lambda _: TimeoutError(
            f"Job {self.job_name} still in the API server {wait:.0f}s after its deletion"), interval=0.2)

    # -- the driver pods -----------------------------------------------------------------------
    def driver_pods(self) -> list[str]:
        """The driver pods of this job that exist and are not being deleted, oldest first."""
        return self.cluster.live_pods(f"{DRIVERS},{self.label}={self.tag}")

    def running_driver(self, than: Sequence[str] = ()) -> str | None:
        """A driver pod Running now with its container ready, none of ``than``."""
        return next((n for n in self.cluster.running_pods(f"{DRIVERS},{self.label}={self.tag}") if n not in than),
                    None)

    def delete_driver_pod(self, grace: float | None = None) -> tuple[str, float]:
        """``DELETE`` the current driver pod (``grace`` its gracePeriodSeconds, None the pod's own); which, when."""
        current = self.driver_pods()
        if not current:
            raise StackError(f"job {self.name}: no driver pod to delete (Job {self.job_name})")
        return current[-1], self.cluster.delete_pod(current[-1], grace=grace)

    def _follow_drivers(self) -> None:
        """Each new driver pod a launch (``driver_launched``), its end the launch's, its output into the log."""
        while not self._stop.wait(0.25):
            try:
                found = pods(self.cluster.api, f"{DRIVERS},{self.label}={self.tag}")
            except ApiError:
                continue
            found.sort(key=lambda p: p["metadata"].get("creationTimestamp", ""))
            for pod in found:
                self._saw(pod)
            live = {p["metadata"]["name"] for p in found}
            for name, launch in self._by_pod.items():
                if name not in live and launch.ended_at is None:
                    launch.ended_at = time.time()

    def _saw(self, pod: dict[str, Any]) -> None:
        name = pod["metadata"]["name"]
        if name not in self._by_pod:
            launch = Launch(number=len(self.launches) + 1, started_at=time.time(), pid=None)
            self.launches.append(launch)
            self._by_pod[name] = launch
            self._record(Kind.DRIVER_LAUNCHED, "driver", launch=launch.number, pod=name)
        launch = self._by_pod[name]
        status = pod.get("status", {})
        container: dict[str, Any] = next(iter(status.get("containerStatuses") or []), {})
        ended = container.get("state", {}).get("terminated")
        if ended and launch.ended_at is None:
            launch.ended_at, launch.returncode = time.time(), ended.get("exitCode")
        started = ended or container.get("state", {}).get("running")
        if started and name not in self._followed:
            self._followed.add(name)
            threading.Thread(target=self._follow_log, args=(name, launch.number), daemon=True,
                             name=f"streamchaos-k8s-log-{name}").start()

    def _follow_log(self, pod: str, number: int) -> None:
        """The pod's output, as it comes, appended to the job's log under a launch's separator line."""
        with self._log_lock, open(self.log_path, "ab") as log:
            log.write(f"\n===== streamchaos: launch {number} of {self.name} (driver pod {pod}) at "
                      f"{time.strftime('%H:%M:%S')} =====\n".encode())
        try:
            resp = self.cluster.api.stream(f"/api/v1/namespaces/{NAMESPACE}/pods/{pod}/log?"
                                           + urllib.parse.urlencode({"follow": "true"}))
        except ApiError:
            return
        try:
            while line := resp.readline():
                with self._log_lock, open(self.log_path, "ab") as log:
                    log.write(line)
        except OSError:
            pass  # the stream ended with the pod
        finally:
            resp.close()

    # -- what the faults and the runner do -------------------------------------------------------
    def kill(self, timeout: float = 15.0, wait: bool = True) -> None:
        """The driver pod deleted at once (grace 0: SIGKILL); the Job's controller makes the next one."""
        pod, at = self.delete_driver_pod(grace=0)
        self._record_at(at, Kind.DRIVER_KILLED, pod=pod, via="DELETE gracePeriodSeconds=0")
        if wait:
            self.wait_gone(timeout)

    def wait_gone(self, timeout: float = 15.0) -> None:
        """Every driver pod deleted so far is gone from the API server."""
        gone = [n for n, launch in self._by_pod.items() if n not in self.driver_pods()]
        poll(lambda: all(self.cluster.pod_gone(n) for n in gone), timeout, lambda _: TimeoutError(
            f"job {self.name}: a deleted driver pod is still in the API server after {timeout:.0f}s"), interval=0.1)

    def _record_at(self, t: float, kind: Kind, **detail: object) -> None:
        self._events.append(TimelineEvent(t, kind, "driver", detail))

    def restart(self, timeout: float = 30.0) -> K8sDriverJob:
        """Nothing while the Job is active (its controller restarts the driver); a new Job once it ended."""
        return self if self.alive else self.start()

    def pause(self, wait: bool = True) -> None:
        raise StackError("a pause of the driver in Kubernetes cluster mode: the driver is a pod, and the API can "
                         "delete a pod but not freeze it; use deploy_mode='client' (the driver is a process here)")

    def wait_paused(self, timeout: float = 5.0) -> None:
        self.pause()

    def resume(self) -> None:
        self.pause()

    def stop(self, timeout: float = 30.0) -> None:
        """The Job deleted (no more restarts), the driver pod deleted with its grace period (Spark stops cleanly,
        closing its event log) up to ``timeout``, then every pod of the job at once; the followers stopped."""
        try:
            had = bool(self.driver_pods())
            self._delete_job(wait=timeout)
            for pod in self.driver_pods():
                self.cluster.delete_pod(pod, grace=min(timeout, 30.0))
            try:
                poll(lambda: not self.driver_pods() and all(self.cluster.pod_gone(n) for n in self._by_pod),
                     timeout, TimeoutError, interval=0.2)
            except TimeoutError:
                pass  # deleted at once below
            for pod in self.cluster.live_pods(f"{self.label}={self.tag}"):
                self.cluster.delete_pod(pod, grace=0)
            if had:
                self._record(Kind.DRIVER_STOPPED, "driver", launch=len(self.launches))
        except (ApiError, StackError):
            pass  # the cluster is gone: its pods with it
        finally:
            self._ended = self._ended if self._ended is not None else (self._last_exit() or 0)
            self._stop.set()
            if self._thread is not None:
                self._thread.join(timeout=5)
                self._thread = None
            if self._watcher is not None:
                self._watcher.stop()
                self._watcher = None

    def tail_log(self, n: int = 40) -> str:
        try:
            lines = self.log_path.read_text(errors="replace").splitlines()
        except OSError:
            return ""
        return "\n".join(lines[-n:])

    def last_error(self) -> str | None:
        """The exception line of the last Python traceback the last driver pod printed."""
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return None
        return last_exception(text.rsplit("\n===== streamchaos: launch ", 1)[-1])
