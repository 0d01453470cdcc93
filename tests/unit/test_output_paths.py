"""Relative ``outputs=`` paths resolve the way Spark's driver resolves them (issue 47): against its working
directory on the local disk, against the run user's home when HDFS is the default filesystem, a URL as it is;
both sides of a comparison normalised alike. Where the driver's working directory is comes from Spark's own
environment event (``user.dir``, ``fs.defaultFS``) on every runtime."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from pytest_streamchaos import storages
from pytest_streamchaos.observe.output_names import check_relative_output
from pytest_streamchaos.observe.paths import DriverDirs, elsewhere, qualify, same_fs
from pytest_streamchaos.observe.progress import SparkProgress
from pytest_streamchaos.observe.storage import RunStorage

LOCAL = DriverDirs("/w/jobs/j")
HDFS = DriverDirs("/w/jobs/j", "hdfs://127.0.0.1:9820", "hdfs://127.0.0.1:9820/user/streamchaos-t1")


@pytest.mark.parametrize(("given", "resolved"), [
    ("data/bronze", "file:///w/jobs/j/data/bronze"),
    ("data/bronze/", "file:///w/jobs/j/data/bronze"),
    ("./data/x/../bronze", "file:///w/jobs/j/data/bronze"),
    ("/tmp/lake/", "file:///tmp/lake"),
    ("file:/tmp/lake", "file:///tmp/lake"),
    ("file:///tmp/lake/", "file:///tmp/lake"),
    ("file:data/bronze", "file:///w/jobs/j/data/bronze"),
    ("hdfs://127.0.0.1:9820/x/", "hdfs://127.0.0.1:9820/x"),
])
def test_on_the_local_disk_a_relative_path_is_under_the_drivers_working_directory(given: str, resolved: str) -> None:
    assert qualify(given, LOCAL) == resolved


@pytest.mark.parametrize(("given", "resolved"), [
    ("output", "hdfs://127.0.0.1:9820/user/streamchaos-t1/output"),
    ("/streamchaos/out/", "hdfs://127.0.0.1:9820/streamchaos/out"),
    ("hdfs://127.0.0.1:9820/user/streamchaos-t1/output", "hdfs://127.0.0.1:9820/user/streamchaos-t1/output"),
    ("file:/tmp/lake", "file:///tmp/lake"),
    ("file:rel", "file:///w/jobs/j/rel"),
])
def test_with_hdfs_as_default_filesystem_a_relative_path_is_in_the_users_home(given: str, resolved: str) -> None:
    assert qualify(given, HDFS) == resolved


def test_the_run_reads_an_output_where_the_driver_writes_it(tmp_path: Path) -> None:
    local = RunStorage.local(tmp_path)
    job = tmp_path / "jobs" / "j"
    assert local.output("data/bronze", job).path == f"{job}/data/bronze"
    assert local.output("file:/tmp/lake/", job).path == "/tmp/lake"
    service = SimpleNamespace(default_fs="hdfs://127.0.0.1:9820", filesystem=lambda: "hdfs fs",
                              client_conf=lambda: {})
    hdfs = RunStorage.on_service(storages.get("hdfs"), service, "t1")
    assert str(hdfs.output("output", job)) == "hdfs://127.0.0.1:9820/user/streamchaos-t1/output"
    # an absolute path is on the default filesystem, as Spark writes it (it was read on the local disk)
    assert str(hdfs.output("/streamchaos/out", job)) == "hdfs://127.0.0.1:9820/streamchaos/out"
    lake = hdfs.output("file:/tmp/lake", job)
    assert (lake.scheme, lake.path) == ("file", "/tmp/lake")


def test_the_drivers_working_directory_and_default_filesystem_come_from_its_environment_event(tmp_path: Path) -> None:
    am = "/nm/usercache/root/appcache/application_1_0001/container_1_0001_01_000001"
    env = {"Event": "SparkListenerEnvironmentUpdate", "Spark Properties": {"spark.master": "yarn"},
           "Hadoop Properties": {"fs.defaultFS": "file:///"}, "System Properties": {"user.dir": am}}
    (tmp_path / "application_1_0001_1.inprogress").write_text(json.dumps(env) + "\n")
    p = SparkProgress(tmp_path)
    p.poll()
    (dirs,) = p.drivers.values()
    assert dirs == DriverDirs(am, "file:///")


def test_a_relative_output_the_driver_puts_elsewhere_is_refused_naming_both_places() -> None:
    """YARN's cluster mode: the driver's working directory is the ApplicationMaster's container, not the job's."""
    am = DriverDirs("/nm/appcache/application_1/container_1_01_000001")
    assert elsewhere(["delta:data/bronze", "output00", "delta:/tmp/abs"], LOCAL, LOCAL) is None
    assert elsewhere(["delta:/tmp/abs", "file:hdfs://nn/x"], am, LOCAL) is None, "absolute: the same wherever it runs"
    msg = elsewhere(["delta:data/bronze"], am, LOCAL)
    assert msg == ("outputs= names delta:data/bronze, a relative path: the job's driver resolves it to "
                   "file:///nm/appcache/application_1/container_1_01_000001/data/bronze (its working directory "
                   "/nm/appcache/application_1/container_1_01_000001, default filesystem file:///), but the run reads "
                   "file:///w/jobs/j/data/bronze; give the path as an absolute one or a URL")


def test_yarn_cluster_mode_refuses_a_relative_local_output_before_the_run() -> None:
    """There the driver's working directory is the ApplicationMaster container's, which each attempt gets anew
    and YARN deletes: nothing the run can read, nor what a restarted driver resumes."""
    check_relative_output("delta:data/bronze", deploy_mode="client", on_host=True)
    check_relative_output("delta:/tmp/lake", deploy_mode="cluster", on_host=True)
    check_relative_output("file:output", deploy_mode="cluster", on_host=False)  # the HDFS home: kept
    check_relative_output("output00", deploy_mode="cluster", on_host=True)
    with pytest.raises(ValueError) as err:
        check_relative_output("file:output", deploy_mode="cluster", on_host=True)
    assert str(err.value) == (
        "outputs={'file:output': ...}: a relative path in YARN's cluster mode is under the ApplicationMaster "
        "container's working directory, which each attempt gets anew and YARN deletes when it ends: give it as an "
        "absolute path, or run with JobSetup(checkpoint='hdfs') (relative paths in the run user's HDFS home)")


def test_default_filesystems_compare_by_scheme_and_authority() -> None:
    assert same_fs("file:///", "file:/") and same_fs("hdfs://127.0.0.1:9820/", "hdfs://127.0.0.1:9820")
    assert not same_fs("hdfs://127.0.0.1:9820", "file:///") and not same_fs("hdfs://a:1", "hdfs://b:1")
