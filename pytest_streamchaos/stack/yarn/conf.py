"""The Hadoop conf dirs of the mini YARN, generated, and the reading of one the plugin did not write.

Pure: ports and paths in, ``{key: value}`` and XML text out (unit-tested in ``tests/unit/test_yarn_conf.py``).
The ResourceManager and every client (spark-submit, the REST client, a user's ``yarn`` CLI) read one
conf dir (:func:`client_site`); each NodeManager reads a conf dir of its own, which adds its ports and
directories (:func:`nodemanager_site`): NodeManager's ``main`` takes no ``-D`` options, so what differs
per node must be in its files.

Chosen for chaos tests on one small machine (each value's reason is beside it): failure detection in
seconds rather than YARN's ten minutes, RM recovery on with its state on local disk (an RM restart is
survivable, running containers kept), memory checks off (the NodeManagers' memory is a budget for the
scheduler, not a limit), log aggregation off, the DefaultContainerExecutor (containers run as this user,
each in a session of its own).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from xml.etree import ElementTree
from xml.sax.saxutils import escape

from pytest_streamchaos.stack.jvm import HADOOP_LOG4J

#: the ResourceManager's ports by name: client RPC, AM scheduler RPC, NM resource tracker, admin, web (REST)
RM_PORTS = ("rpc", "scheduler", "tracker", "admin", "web")
#: a NodeManager's ports: container management RPC, the localizer, web (REST)
NM_PORTS = ("rpc", "localizer", "web")
#: what a NodeManager offers the scheduler: an ApplicationMaster and two executors of a streaming job fit
#: on either one (Spark asks 512 MB + 384 MB overhead per executor and as much for a client-mode AM; a
#: cluster-mode AM is the driver: 1 GB + 384 MB unless the job says less), so a lost node's containers
#: can all move to the other. Not enforced (memory checks are off): a budget, not a limit.
NM_MEMORY_MB = 4096
NM_VCORES = 4
#: smallest container YARN hands out; requests are rounded up to a multiple of it (the default 1024
#: would make every 896 MB executor a 1 GB one)
MIN_ALLOCATION_MB = 128
#: seconds without a heartbeat until the RM declares a NodeManager LOST (YARN's default is 10 minutes)
NM_EXPIRY_S = 10
#: how many attempts the RM grants an application at most (``spark.yarn.maxAppAttempts`` must not ask more)
MAX_AM_ATTEMPTS = 4
#: the RM web (REST) port a conf that names none listens on, and the RPC port (YARN's defaults)
DEFAULT_WEB_PORT = 8088
DEFAULT_RPC_PORT = 8032
HOST = "127.0.0.1"

LOG4J = HADOOP_LOG4J + """\
# a line per allocation, heartbeat or audit record: noise at a chaos test's pace
log4j.logger.org.apache.hadoop.yarn.server.resourcemanager.RMAuditLogger=WARN
log4j.logger.org.apache.hadoop.yarn.server.nodemanager.NMAuditLogger=WARN
log4j.logger.org.apache.hadoop.yarn.server.resourcemanager.scheduler.capacity=WARN
log4j.logger.org.apache.hadoop.yarn.server.resourcemanager.scheduler.AbstractYarnScheduler=WARN
log4j.logger.org.apache.hadoop.yarn.server.resourcemanager.rmcontainer.RMContainerImpl=WARN
log4j.logger.org.apache.hadoop.util.NativeCodeLoader=ERROR
log4j.logger.org.apache.hadoop.conf.Configuration.deprecation=WARN
"""


@dataclass(frozen=True)
class YarnPlan:
    """Where the mini cluster's daemons listen and keep their files."""

    workdir: Path
    rm_ports: Mapping[str, int]  #: :data:`RM_PORTS` -> port
    nm_ports: Sequence[Mapping[str, int]]  #: per NodeManager, :data:`NM_PORTS` -> port
    default_fs: str = "file:///"  #: ``hdfs://...`` when HDFS runs beside
    extra: Mapping[str, str] = field(default_factory=dict)  #: yarn-site entries added or overridden

    @property
    def rm_state_dir(self) -> Path:
        """Where the RM keeps its recovery state (applications and attempts)."""
        return self.workdir / "rm-state"

    def nm_dir(self, i: int) -> Path:
        """NodeManager ``i``'s own directory (its conf dir, local dirs and container logs)."""
        return self.workdir / f"nodemanager-{i}"


def client_site(plan: YarnPlan) -> dict[str, str]:
    """``yarn-site.xml`` of the ResourceManager and of every client."""
    rm = plan.rm_ports
    site = {
        "yarn.resourcemanager.hostname": HOST,
        "yarn.resourcemanager.bind-host": HOST,
        "yarn.resourcemanager.address": f"{HOST}:{rm['rpc']}",
        "yarn.resourcemanager.scheduler.address": f"{HOST}:{rm['scheduler']}",
        "yarn.resourcemanager.resource-tracker.address": f"{HOST}:{rm['tracker']}",
        "yarn.resourcemanager.admin.address": f"{HOST}:{rm['admin']}",
        "yarn.resourcemanager.webapp.address": f"{HOST}:{rm['web']}",
        # RM restart: applications and attempts survive in a state store on local disk, and running
        # containers are kept (work-preserving); the scheduler waits for the NodeManagers to resync
        # before it allocates again (default 10 s: shortened, the nodes here resync within a heartbeat)
        "yarn.resourcemanager.recovery.enabled": "true",
        "yarn.resourcemanager.store.class":
            "org.apache.hadoop.yarn.server.resourcemanager.recovery.FileSystemRMStateStore",
        "yarn.resourcemanager.fs.state-store.uri": plan.rm_state_dir.as_uri(),
        # the RM's node-attribute and node-label stores default to /tmp/hadoop-yarn-<user>, outside
        # hadoop.tmp.dir: a run would leave them behind
        "yarn.node-attribute.fs-store.root-dir": (plan.workdir / "tmp" / "node-attribute").as_uri(),
        "yarn.node-labels.fs-store.root-dir": (plan.workdir / "tmp" / "node-labels").as_uri(),
        "yarn.resourcemanager.work-preserving-recovery.enabled": "true",
        "yarn.resourcemanager.work-preserving-recovery.scheduling-wait-ms": "3000",
        # failure detection in seconds: a silent NodeManager is LOST after NM_EXPIRY_S (default 10 min)
        "yarn.nm.liveness-monitor.expiry-interval-ms": str(NM_EXPIRY_S * 1000),
        "yarn.resourcemanager.nm-liveness-monitor.interval-ms": "1000",
        "yarn.resourcemanager.nodemanagers.heartbeat-interval-ms": "1000",
        "yarn.am.liveness-monitor.expiry-interval-ms": "30000",
        "yarn.resourcemanager.am.max-attempts": str(MAX_AM_ATTEMPTS),
        # how soon a NodeManager or an ApplicationMaster tries the RM again (default 30 s: an RM restart
        # or a NodeManager that starts before the RM listens would wait that long), and how long an AM
        # keeps trying a NodeManager that is gone before it gives the container up (default 3 min)
        "yarn.resourcemanager.connect.retry-interval.ms": "500",
        "yarn.client.nodemanager-connect.retry-interval-ms": "1000",
        "yarn.client.nodemanager-connect.max-wait-ms": "10000",
        "yarn.scheduler.minimum-allocation-mb": str(MIN_ALLOCATION_MB),
        "yarn.scheduler.maximum-allocation-mb": str(NM_MEMORY_MB),
        "yarn.scheduler.maximum-allocation-vcores": str(NM_VCORES),
        "yarn.resourcemanager.resource-tracker.client.thread-count": "4",
        "yarn.resourcemanager.client.thread-count": "4",
        "yarn.resourcemanager.scheduler.client.thread-count": "4",
        "yarn.resourcemanager.admin.client.thread-count": "1",
        "yarn.log-aggregation-enable": "false",
        "yarn.timeline-service.enabled": "false",
        "yarn.webapp.ui2.enable": "false",
        "yarn.acl.enable": "false",
    }
    return {**site, **plan.extra}


def nodemanager_site(plan: YarnPlan, i: int) -> dict[str, str]:
    """``yarn-site.xml`` of NodeManager ``i``: the client's plus its own ports, directories and resources."""
    ports, own = plan.nm_ports[i], plan.nm_dir(i)
    site = {
        **client_site(plan),
        "yarn.nodemanager.hostname": HOST,
        # with a bind host, a NodeManager names itself by its address's host (127.0.0.1), not by what that
        # resolves back to (localhost): YARN's node id is then the address the conf names
        "yarn.nodemanager.bind-host": HOST,
        "yarn.nodemanager.address": f"{HOST}:{ports['rpc']}",
        "yarn.nodemanager.localizer.address": f"{HOST}:{ports['localizer']}",
        "yarn.nodemanager.webapp.address": f"{HOST}:{ports['web']}",
        "yarn.nodemanager.local-dirs": str(own / "local"),
        "yarn.nodemanager.log-dirs": str(own / "containers"),
        "yarn.nodemanager.resource.memory-mb": str(NM_MEMORY_MB),
        "yarn.nodemanager.resource.cpu-vcores": str(NM_VCORES),
        "yarn.nodemanager.resource.detect-hardware-capabilities": "false",
        "yarn.nodemanager.container-executor.class":
            "org.apache.hadoop.yarn.server.nodemanager.DefaultContainerExecutor",
        # the memory offered is a scheduling budget on a shared machine, not a limit to enforce, and
        # the monitor's /proc scans every 3 s cost CPU that is scarce here
        "yarn.nodemanager.pmem-check-enabled": "false",
        "yarn.nodemanager.vmem-check-enabled": "false",
        "yarn.nodemanager.container-monitor.enabled": "false",
        # a shared machine's disk may be fuller than YARN's 90 %: the node must not call itself unhealthy
        "yarn.nodemanager.disk-health-checker.max-disk-utilization-per-disk-percentage": "99.9",
        "yarn.nodemanager.disk-health-checker.min-free-space-per-disk-mb": "100",
        "yarn.nodemanager.disk-health-checker.min-free-space-per-disk-watermark-high-mb": "100",
        # a killed node loses its containers (a NodeManager that recovered them would keep them)
        "yarn.nodemanager.recovery.enabled": "false",
        "yarn.nodemanager.aux-services": "",
        "yarn.nodemanager.env-whitelist":
            "JAVA_HOME,HADOOP_CONF_DIR,PATH,LANG,TZ,HADOOP_COMMON_HOME,HADOOP_HDFS_HOME,HADOOP_YARN_HOME",
        "yarn.nodemanager.container-manager.thread-count": "4",
        "yarn.nodemanager.localizer.client.thread-count": "2",
        "yarn.nodemanager.localizer.fetch.thread-count": "2",
        "yarn.nodemanager.delete.thread-count": "1",
    }
    return {**site, **plan.extra}


def capacity_scheduler() -> dict[str, str]:
    """``capacity-scheduler.xml``: one queue, ``default``, with the whole cluster."""
    return {
        "yarn.scheduler.capacity.root.queues": "default",
        "yarn.scheduler.capacity.root.default.capacity": "100",
        "yarn.scheduler.capacity.root.default.maximum-capacity": "100",
        "yarn.scheduler.capacity.root.default.state": "RUNNING",
        # ApplicationMasters may use the whole cluster: with the default 10 % a single AM of a small
        # cluster would wait forever in ACCEPTED
        "yarn.scheduler.capacity.maximum-am-resource-percent": "1.0",
        # containers go where there is room at once, without waiting for a locality Spark never asks for
        "yarn.scheduler.capacity.node-locality-delay": "-1",
    }


def core_site(plan: YarnPlan, secret_file: Path) -> dict[str, str]:
    """``core-site.xml``: the default filesystem (the staging dir of a submission lives there), scratch
    space, and the HTTP signature secret (else every daemon reads ``~/hadoop-http-auth-signature-secret``)."""
    return {"fs.defaultFS": plan.default_fs, "hadoop.tmp.dir": str(plan.workdir / "tmp"),
            "hadoop.http.authentication.signature.secret.file": str(secret_file)}


def site_xml(props: Mapping[str, str]) -> str:
    """A Hadoop ``*-site.xml`` of ``props``."""
    rows = "".join(f"  <property><name>{escape(k)}</name><value>{escape(v)}</value></property>\n"
                   for k, v in props.items())
    return f'<?xml version="1.0"?>\n<configuration>\n{rows}</configuration>\n'


def parse_site_xml(text: str) -> dict[str, str]:
    """The properties of a Hadoop ``*-site.xml`` (later entries win, as in Hadoop); ``ValueError``
    naming what is wrong when it is not one."""
    try:
        root = ElementTree.fromstring(text)
    except ElementTree.ParseError as exc:
        raise ValueError(f"not XML: {exc}") from None
    if root.tag != "configuration":
        raise ValueError(f"the root element is <{root.tag}>, not <configuration>")
    props: dict[str, str] = {}
    for prop in root.iter("property"):
        name, value = prop.findtext("name"), prop.findtext("value")
        if name:
            props[name.strip()] = (value or "").strip()
    return props


_VAR = re.compile(r"\$\{([^}$\s]+)\}")


def expand(conf: Mapping[str, str], value: str, depth: int = 20) -> str:
    """``value`` with Hadoop's ``${key}`` references replaced from ``conf`` (unknown ones kept)."""
    for _ in range(depth):
        new = _VAR.sub(lambda m: conf.get(m.group(1), m.group(0)), value)
        if new == value:
            break
        value = new
    return value


def rm_web_addresses(conf: Mapping[str, str]) -> list[str]:
    """``host:port`` of every ResourceManager's web (REST) server a client conf names: one, or one per
    RM id of an HA pair (``yarn.resourcemanager.ha.rm-ids``). A missing key takes YARN's default, as
    Hadoop's own client would (``${yarn.resourcemanager.hostname}:8088``)."""
    ids = [i.strip() for i in conf.get("yarn.resourcemanager.ha.rm-ids", "").split(",") if i.strip()]
    ha = conf.get("yarn.resourcemanager.ha.enabled", "false").lower() == "true" and ids
    suffixes = [f".{i}" for i in ids] if ha else [""]
    found = []
    for sfx in suffixes:
        host = conf.get(f"yarn.resourcemanager.hostname{sfx}") or conf.get("yarn.resourcemanager.hostname", "0.0.0.0")
        addr = conf.get(f"yarn.resourcemanager.webapp.address{sfx}") or f"{host}:{DEFAULT_WEB_PORT}"
        name, _, port = expand({**conf, "yarn.resourcemanager.hostname": host}, addr).rpartition(":")
        found.append(f"{HOST if name in ('', '0.0.0.0') else name}:{port}")  # a wildcard bind: reach it here
    return found


def write_conf_dir(directory: Path, files: Mapping[str, Mapping[str, str]]) -> Path:
    """Write ``{file name: properties}`` as site files plus ``log4j.properties`` into ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    for name, props in files.items():
        (directory / name).write_text(site_xml(props))
    (directory / "log4j.properties").write_text(LOG4J)
    return directory
