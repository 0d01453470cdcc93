"""How the mini YARN's daemons are configured and started: ports (allocated, or pinned and checked),
the conf dirs (:mod:`.conf`) and each daemon's command line and environment.

The jars are Maven Central's (:func:`~pytest_streamchaos.machine.artifacts.hadoop_yarn_jars`, resolved
once per machine) on a class path of their own, after the daemon's conf dir.
"""

from __future__ import annotations

import itertools
import os
import secrets
from collections.abc import Mapping, Sequence
from pathlib import Path

from pytest_streamchaos.machine.ports import HOST, port_holder, port_is_free
from pytest_streamchaos.stack import host as stack_host
from pytest_streamchaos.stack.base import StackError
from pytest_streamchaos.stack.jvm import DAEMON_JAVA_OPTS, jvm_tmp_opts
from pytest_streamchaos.stack.process import ManagedProcess
from pytest_streamchaos.stack.yarn import conf as yconf
from pytest_streamchaos.stack.yarn.nodes import (
    NODEMANAGER_CLASS,
    NODEMANAGER_HEAP,
    RESOURCEMANAGER_CLASS,
    RESOURCEMANAGER_HEAP,
    NodeManager,
    YarnDaemon,
)


def plan_ports(n_nodemanagers: int, fixed: Mapping[str, int]) -> tuple[dict[str, int], list[dict[str, int]]]:
    """The RM's and each NodeManager's ports: ``fixed`` ones (keys ``resourcemanager.<port>``,
    ``nodemanager-<i>.<port>``) where given, free ones otherwise; every one checked free."""
    keys = [f"resourcemanager.{p}" for p in yconf.RM_PORTS]
    keys += [f"nodemanager-{i}.{p}" for i in range(n_nodemanagers) for p in yconf.NM_PORTS]
    unknown = sorted(set(fixed) - set(keys))
    if unknown:
        raise StackError(f"fixed_ports: unknown keys {unknown}; fix: use {', '.join(keys)}")
    ports = stack_host.current().ports
    for port in fixed.values():
        ports.reserve(port)  # before any allocation, so no other daemon is handed a pinned port
    chosen = {k: fixed.get(k) or ports.free() for k in keys}
    for key, port in chosen.items():
        if not port_is_free(port):
            holder = port_holder(port) or "a socket in TIME_WAIT"
            raise StackError(f"YARN port {key}={port} on {HOST} is taken (by {holder}); fix: stop that process, "
                             f"or drop {key!r} from fixed_ports so the plugin picks a free port")
    rm = {p: chosen[f"resourcemanager.{p}"] for p in yconf.RM_PORTS}
    nms = [{p: chosen[f"nodemanager-{i}.{p}"] for p in yconf.NM_PORTS} for i in range(n_nodemanagers)]
    return rm, nms


_clusters = itertools.count(1)


class YarnLaunch:
    """Writes the conf dirs of a :class:`~.conf.YarnPlan` and builds its daemons' handles."""

    def __init__(self, plan: yconf.YarnPlan, java: Path, java_home: Path, jars: Sequence[Path]) -> None:
        self.plan, self.java, self.java_home, self.jars = plan, java, java_home, list(jars)
        self.prefix = f"yarn{next(_clusters)}"  #: names this cluster's NodeManager cgroups

    @property
    def conf_dir(self) -> Path:
        """The client conf dir (the RM reads it too): what ``HADOOP_CONF_DIR`` of a submitter points at."""
        return self.plan.workdir / "conf"

    def nm_conf_dir(self, i: int) -> Path:
        return self.plan.nm_dir(i) / "conf"

    def write_confs(self) -> None:
        """Every conf dir: the client's (and RM's), and one per NodeManager."""
        wd = self.plan.workdir
        for sub in ("logs", "tmp", "staging"):
            (wd / sub).mkdir(parents=True, exist_ok=True)
        secret = wd / "http-signature-secret"
        secret.write_text(secrets.token_hex(16))
        core, sched = yconf.core_site(self.plan, secret), yconf.capacity_scheduler()
        yconf.write_conf_dir(self.conf_dir, {"yarn-site.xml": yconf.client_site(self.plan), "core-site.xml": core,
                                             "capacity-scheduler.xml": sched})
        for i in range(len(self.plan.nm_ports)):
            for sub in ("local", "containers"):
                (self.plan.nm_dir(i) / sub).mkdir(parents=True, exist_ok=True)
            yconf.write_conf_dir(self.nm_conf_dir(i), {"yarn-site.xml": yconf.nodemanager_site(self.plan, i),
                                                       "core-site.xml": core})
        # The daemons' web servers look up webapps/<name> on the class path; Hadoop's tarball ships them
        # as a directory, the Maven jars do not. Empty ones are enough for the REST API (servlets in code).
        for conf_dir, app in ((self.conf_dir, "cluster"), *((self.nm_conf_dir(i), "node")
                                                           for i in range(len(self.plan.nm_ports)))):
            (conf_dir / "webapps" / app).mkdir(parents=True, exist_ok=True)
            (conf_dir / "webapps" / "static").mkdir(parents=True, exist_ok=True)

    def resourcemanager(self) -> YarnDaemon:
        return YarnDaemon("resourcemanager", 0, self.plan.rm_ports,
                          lambda: self._launch("resourcemanager", RESOURCEMANAGER_CLASS, self.conf_dir))

    def nodemanager(self, i: int) -> NodeManager:
        group = f"{self.prefix}-nodemanager-{i}"
        return NodeManager(i, self.plan.nm_ports[i],
                           lambda: self._launch(f"nodemanager-{i}", NODEMANAGER_CLASS, self.nm_conf_dir(i), group),
                           group)

    def argv(self, name: str, cls: str, conf_dir: Path) -> list[str]:
        """One daemon's command line: small heap, the stack's daemon JVM flags (C1 only, serial GC: no GC
        threads), its scratch files in the workdir, its conf dir first on the class path."""
        heap = RESOURCEMANAGER_HEAP if cls == RESOURCEMANAGER_CLASS else NODEMANAGER_HEAP
        logs = self.plan.workdir / "logs"
        return [str(self.java), f"-Xmx{heap}", *DAEMON_JAVA_OPTS.split(),
                *jvm_tmp_opts(self.plan.workdir / "tmp" / name).split(),
                f"-Dlog4j.configuration={(conf_dir / 'log4j.properties').as_uri()}",
                f"-Dhadoop.log.dir={logs}", f"-Dyarn.log.dir={logs}", f"-Dstreamchaos.node={name}",
                "-cp", os.pathsep.join([str(conf_dir), *map(str, self.jars)]), cls]

    def env(self, conf_dir: Path) -> dict[str, str]:
        """A daemon's environment: nothing of the caller's HADOOP_* / CLASSPATH leaks in. A NodeManager
        passes JAVA_HOME, PATH and LANG on to its containers (``yarn.nodemanager.env-whitelist``)."""
        return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", str(self.plan.workdir)),
                "LANG": os.environ.get("LANG", "C.UTF-8"), "JAVA_HOME": str(self.java_home),
                "HADOOP_CONF_DIR": str(conf_dir), "TMPDIR": str(self.plan.workdir / "tmp")}

    def _launch(self, name: str, cls: str, conf_dir: Path, group: str | None = None) -> ManagedProcess:
        """``group``: the cgroup under the job's that the daemon and all it forks stay in (a node's containers)."""
        return ManagedProcess(self.argv(name, cls, conf_dir), env=self.env(conf_dir), cwd=self.plan.workdir,
                              log_path=self.plan.workdir / "logs" / f"{name}.log", name=f"yarn-{name}",
                              job=True, subgroup=group)
