"""An existing YARN, by its Hadoop conf dir: the plugin starts nothing and reaches it only through what
a client may use (its RPC port for spark-submit, its REST API for the state and the faults).

:func:`attach` reads ``yarn-site.xml`` (and ``core-site.xml`` when there) for the ResourceManager's
addresses -- one, or each of an HA pair -- and checks, before anything else starts, that one of them
answers as the active ResourceManager and that its client RPC port accepts connections. Anything else is
one line naming the conf dir, what was tried and the fix.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass
from pathlib import Path

from pytest_streamchaos.stack.base import StackError
from pytest_streamchaos.stack.yarn import conf as yconf
from pytest_streamchaos.stack.yarn.rest import ClusterInfo, ResourceManagerApi, YarnApiError

#: how long each address may take to answer when attaching
CHECK_TIMEOUT_S = 3.0


@dataclass(frozen=True)
class AttachedYarn:
    """A YARN the plugin did not start (no host access: the YARN backend refuses the faults
    that need it)."""

    conf_dir: Path
    conf: dict[str, str]  #: core-site and yarn-site as a client reads them
    api: ResourceManagerApi
    info: ClusterInfo

    def submit_settings(self, spark_home: Path) -> tuple[dict[str, str], dict[str, str]]:
        """(environment, Spark conf) of a submission: the conf dir, nothing else (Spark ships its own jars
        unless the job's conf says where the cluster has them, e.g. ``spark.yarn.archive``)."""
        return {"HADOOP_CONF_DIR": str(self.conf_dir), "YARN_CONF_DIR": str(self.conf_dir)}, {}


def read_conf_dir(conf_dir: Path) -> dict[str, str]:
    """core-site.xml (if any) and yarn-site.xml of ``conf_dir``, merged as a Hadoop client merges them."""
    site = conf_dir / "yarn-site.xml"
    if not conf_dir.is_dir():
        raise StackError(f"YARN conf dir {conf_dir} does not exist; fix: pass the Hadoop conf dir of your cluster "
                         "(the one with yarn-site.xml, often /etc/hadoop/conf)")
    if not site.is_file():
        raise StackError(f"YARN conf dir {conf_dir} has no yarn-site.xml, so it names no ResourceManager; fix: pass "
                         "the Hadoop conf dir of your cluster (often /etc/hadoop/conf)")
    merged: dict[str, str] = {}
    for name in ("core-site.xml", "yarn-site.xml"):
        path = conf_dir / name
        if not path.is_file():
            continue
        try:
            merged.update(yconf.parse_site_xml(path.read_text()))
        except (OSError, ValueError) as exc:
            raise StackError(f"cannot read {path}: {exc}; fix: pass a Hadoop conf dir with a valid {name}") from None
    return merged


def attach(conf_dir: str | Path, timeout: float = CHECK_TIMEOUT_S) -> AttachedYarn:
    """The YARN ``conf_dir`` names, checked reachable (see the module docstring)."""
    conf_dir = Path(conf_dir).absolute()
    conf = read_conf_dir(conf_dir)
    if conf.get("yarn.http.policy", "HTTP_ONLY").upper() == "HTTPS_ONLY":
        raise StackError(f"{conf_dir}/yarn-site.xml sets yarn.http.policy=HTTPS_ONLY: the plugin reads YARN's REST API "
                         "over plain HTTP only (not yet over TLS); fix: use a cluster whose RM web API serves HTTP")
    tried = []
    for address in yconf.rm_web_addresses(conf):
        api = ResourceManagerApi(address, timeout=timeout)
        try:
            info = api.info()
        except YarnApiError as exc:
            tried.append(str(exc))
            continue
        if info.ha_state == "ACTIVE":
            _check_rpc(conf, conf_dir, timeout)
            return AttachedYarn(conf_dir, conf, api, info)
        tried.append(f"{address} is {info.ha_state}")
    raise StackError(f"no active YARN ResourceManager answers for {conf_dir}/yarn-site.xml ({'; '.join(tried)}); "
                     "fix: start the cluster (or `python -m pytest_streamchaos.stack up yarn --conf-out DIR`), or "
                     "pass the conf dir of a running one")


def _check_rpc(conf: dict[str, str], conf_dir: Path, timeout: float) -> None:
    """The RM's client RPC port (what spark-submit talks to) accepts a connection."""
    host = conf.get("yarn.resourcemanager.hostname", yconf.HOST)
    address = yconf.expand(conf, conf.get("yarn.resourcemanager.address", f"{host}:{yconf.DEFAULT_RPC_PORT}"))
    name, _, port = address.rpartition(":")
    try:
        with socket.create_connection((name.replace("0.0.0.0", yconf.HOST), int(port)), timeout=timeout):
            pass
    except (OSError, ValueError) as exc:
        raise StackError(f"the YARN ResourceManager's REST API answers but its client RPC port {address} "
                         f"(yarn.resourcemanager.address in {conf_dir}/yarn-site.xml) does not ({exc}); fix: check "
                         "that this host may reach it (a firewall, an HA address)") from None
