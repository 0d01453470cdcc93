"""The mini YARN's generated conf dirs (stack/yarn/conf.py, launch.py) and the reading of a conf dir the
plugin did not write (stack/yarn/attach.py): pure, no JVM."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_streamchaos.machine import artifacts
from pytest_streamchaos.stack.base import StackError
from pytest_streamchaos.stack.yarn import conf as yconf
from pytest_streamchaos.stack.yarn.attach import read_conf_dir
from pytest_streamchaos.stack.yarn.launch import YarnLaunch, plan_ports

RM = {"rpc": 20001, "scheduler": 20002, "tracker": 20003, "admin": 20004, "web": 20005}
NMS = [{"rpc": 21001, "localizer": 21002, "web": 21003}, {"rpc": 22001, "localizer": 22002, "web": 22003}]


def plan(tmp_path: Path, **kw) -> yconf.YarnPlan:
    return yconf.YarnPlan(tmp_path, RM, NMS, **kw)


def test_client_site_names_every_rm_address_on_loopback_and_turns_recovery_on(tmp_path: Path) -> None:
    site = yconf.client_site(plan(tmp_path))
    assert site["yarn.resourcemanager.address"] == "127.0.0.1:20001"
    assert site["yarn.resourcemanager.scheduler.address"] == "127.0.0.1:20002"
    assert site["yarn.resourcemanager.resource-tracker.address"] == "127.0.0.1:20003"
    assert site["yarn.resourcemanager.admin.address"] == "127.0.0.1:20004"
    assert site["yarn.resourcemanager.webapp.address"] == "127.0.0.1:20005"
    assert site["yarn.resourcemanager.recovery.enabled"] == "true"
    assert site["yarn.resourcemanager.store.class"].endswith("FileSystemRMStateStore")
    assert site["yarn.resourcemanager.fs.state-store.uri"] == (tmp_path / "rm-state").as_uri()
    assert site["yarn.log-aggregation-enable"] == "false"
    # a silent NodeManager is LOST in seconds, not YARN's 10 minutes
    assert int(site["yarn.nm.liveness-monitor.expiry-interval-ms"]) == yconf.NM_EXPIRY_S * 1000 <= 30_000
    # no NodeManager address in the client's conf: each NodeManager's own says it
    assert not any(k.startswith("yarn.nodemanager.") for k in site)


def test_each_nodemanager_gets_its_own_ports_dirs_and_the_resources_of_a_streaming_job(tmp_path: Path) -> None:
    p = plan(tmp_path)
    one, two = yconf.nodemanager_site(p, 0), yconf.nodemanager_site(p, 1)
    assert one["yarn.nodemanager.address"] == "127.0.0.1:21001" and two["yarn.nodemanager.address"] == "127.0.0.1:22001"
    assert one["yarn.nodemanager.webapp.address"] == "127.0.0.1:21003"
    assert one["yarn.nodemanager.local-dirs"] != two["yarn.nodemanager.local-dirs"]
    assert one["yarn.nodemanager.local-dirs"].startswith(str(tmp_path / "nodemanager-0"))
    assert one["yarn.nodemanager.container-executor.class"].endswith(".DefaultContainerExecutor")
    assert one["yarn.nodemanager.vmem-check-enabled"] == one["yarn.nodemanager.pmem-check-enabled"] == "false"
    # an AM and two executors of 512 MB + 384 MB overhead fit on one node, so a lost node's containers can move
    container = 512 + 384
    assert int(one["yarn.nodemanager.resource.memory-mb"]) >= 3 * container
    assert container % int(one["yarn.scheduler.minimum-allocation-mb"]) == 0  # not rounded up to a bigger one
    # the NodeManager's conf has the client's RM addresses too
    assert one["yarn.resourcemanager.address"] == "127.0.0.1:20001"


def test_extra_entries_win_everywhere(tmp_path: Path) -> None:
    p = plan(tmp_path, extra={"yarn.resourcemanager.am.max-attempts": "7", "yarn.nodemanager.resource.memory-mb": "1"})
    assert yconf.client_site(p)["yarn.resourcemanager.am.max-attempts"] == "7"
    assert yconf.nodemanager_site(p, 1)["yarn.nodemanager.resource.memory-mb"] == "1"


def test_capacity_scheduler_lets_an_application_master_use_the_cluster() -> None:
    sched = yconf.capacity_scheduler()
    assert sched["yarn.scheduler.capacity.root.queues"] == "default"
    assert float(sched["yarn.scheduler.capacity.maximum-am-resource-percent"]) == 1.0


def test_site_xml_round_trips_escaped_values() -> None:
    props = {"a.b": "x<y&z", "c": "", "d": "${a.b}:1"}
    assert yconf.parse_site_xml(yconf.site_xml(props)) == props


def test_parse_site_xml_names_what_is_wrong() -> None:
    with pytest.raises(ValueError, match="not XML"):
        yconf.parse_site_xml("<configuration><property>")
    with pytest.raises(ValueError, match="<beans>"):
        yconf.parse_site_xml("<beans/>")


def test_rm_web_addresses_take_yarns_defaults_and_ha_ids() -> None:
    assert yconf.rm_web_addresses({"yarn.resourcemanager.webapp.address": "rm1.example:8088"}) == ["rm1.example:8088"]
    assert yconf.rm_web_addresses({"yarn.resourcemanager.hostname": "master.example"}) == ["master.example:8088"]
    assert yconf.rm_web_addresses({}) == ["127.0.0.1:8088"]  # YARN's default host is 0.0.0.0: this host
    assert yconf.rm_web_addresses({"yarn.resourcemanager.webapp.address": "${yarn.resourcemanager.hostname}:9000",
                                   "yarn.resourcemanager.hostname": "h"}) == ["h:9000"]
    ha = {"yarn.resourcemanager.ha.enabled": "true", "yarn.resourcemanager.ha.rm-ids": "rm1, rm2",
          "yarn.resourcemanager.hostname.rm1": "a", "yarn.resourcemanager.hostname.rm2": "b",
          "yarn.resourcemanager.webapp.address.rm2": "b:18088"}
    assert yconf.rm_web_addresses(ha) == ["a:8088", "b:18088"]


def test_launch_writes_a_client_conf_dir_and_one_per_nodemanager(tmp_path: Path) -> None:
    launch = YarnLaunch(plan(tmp_path), Path("/usr/bin/java"), Path("/usr"), [Path("/jars/a.jar")])
    launch.write_confs()
    client = read_conf_dir(launch.conf_dir)
    assert client["yarn.resourcemanager.webapp.address"] == "127.0.0.1:20005"
    assert client["fs.defaultFS"] == "file:///"
    assert (launch.conf_dir / "capacity-scheduler.xml").is_file()
    nm1 = read_conf_dir(launch.nm_conf_dir(1))
    assert nm1["yarn.nodemanager.address"] == "127.0.0.1:22001"
    assert (tmp_path / "nodemanager-1" / "local").is_dir()
    argv = launch.argv("nodemanager-1", "org.apache.hadoop.yarn.server.nodemanager.NodeManager", launch.nm_conf_dir(1))
    assert argv[-1].endswith("NodeManager") and "-XX:+UseSerialGC" in argv  # no GC threads on 2 cores
    assert argv[argv.index("-cp") + 1].split(":")[0] == str(launch.nm_conf_dir(1))  # its own conf first


def test_plan_ports_refuses_unknown_keys_and_taken_ports() -> None:
    import socket

    with pytest.raises(StackError, match="unknown keys.*resourcemanager.webui"):
        plan_ports(2, {"resourcemanager.webui": 1})
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        taken = s.getsockname()[1]
        with pytest.raises(StackError, match=f"resourcemanager.web={taken}.*is taken"):
            plan_ports(1, {"resourcemanager.web": taken})
    rm, nms = plan_ports(2, {})
    assert len(set(rm.values()) | {p for nm in nms for p in nm.values()}) == 5 + 2 * 3


def test_read_conf_dir_says_what_is_missing(tmp_path: Path) -> None:
    with pytest.raises(StackError, match="does not exist"):
        read_conf_dir(tmp_path / "nope")
    with pytest.raises(StackError, match="no yarn-site.xml"):
        read_conf_dir(tmp_path)
    (tmp_path / "yarn-site.xml").write_text("<configuration><property>")
    with pytest.raises(StackError, match="cannot read .*yarn-site.xml"):
        read_conf_dir(tmp_path)


def test_yarn_jar_set_is_pinned_to_the_hdfs_release_in_a_folder_of_its_own() -> None:
    yarn, hdfs = artifacts.hadoop_yarn_jars(), artifacts.hadoop_jars()
    assert yarn.name != hdfs.name  # the HDFS set's manifest stays valid
    assert all(c.endswith(":" + artifacts.HADOOP_VERSION) for c in yarn.coordinates)
    names = {c.split(":")[1] for c in yarn.coordinates}
    assert {"hadoop-yarn-server-resourcemanager", "hadoop-yarn-server-nodemanager", "hadoop-common"} <= names



def test_every_store_the_daemons_write_lies_under_the_workdir(tmp_path: Path) -> None:
    # YARN's node-attribute and node-label stores default to /tmp/hadoop-yarn-<user>, outside
    # hadoop.tmp.dir: a run left /tmp/hadoop-yarn-root behind before they were named
    p = plan(tmp_path)
    sites = [yconf.client_site(p), *(yconf.nodemanager_site(p, i) for i in range(len(NMS))),
             yconf.core_site(p, tmp_path / "secret")]
    for key in ("yarn.node-attribute.fs-store.root-dir", "yarn.node-labels.fs-store.root-dir"):
        assert sites[0][key].startswith(tmp_path.as_uri())
    local = [v for s in sites for v in s.values() if v.startswith(("/", "file:"))]
    paths = [v for v in local if v != "file:///"]  # fs.defaultFS: a filesystem, not a store
    assert paths and all(v.startswith((str(tmp_path), tmp_path.as_uri())) for v in paths), paths
