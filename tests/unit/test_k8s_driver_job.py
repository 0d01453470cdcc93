"""Cluster mode on Kubernetes, the parts that need no cluster (stack/k8s/driver_job.py): which host folders the
driver pod mounts, spark-submit's arguments in the pod, the Job's manifest, and the driver pod fault's checks."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from pytest_streamchaos.faults.families.kubernetes_driver import DeleteDriverPod
from pytest_streamchaos.faults.registry import check_run
from pytest_streamchaos.faults.spec import FaultSpecError
from pytest_streamchaos.stack.capabilities import DriverPods
from pytest_streamchaos.stack.k8s.driver_job import absolute_paths, manifest, mounts, pod_submit_args


def test_the_mounts_are_the_nearest_folders_none_inside_another(tmp_path: Path) -> None:
    jobs, ckpt = tmp_path / "run" / "jobs", tmp_path / "run" / "checkpoint" / "q1"
    jobs.mkdir(parents=True)
    (tmp_path / "lib").mkdir()
    jar = tmp_path / "lib" / "kafka.jar"
    jar.write_text("")
    got = mounts([jobs, ckpt, jar, jobs / "orders"])
    # the checkpoint does not exist yet: its nearest existing folder is the run's, which holds the jobs' too
    assert got == [tmp_path / "lib", tmp_path / "run"]
    assert mounts([Path("/tmp/not-there-x/y")]) == [], "never / nor /tmp whole"


def test_absolute_paths_come_from_arguments_lists_and_jars() -> None:
    argv = ["--py-files", "/a/b/x.zip,/a/c/y.py", "job.py", "/data/ckpt", "relative"]
    assert absolute_paths(argv, {"spark.jars": "file:///j/k.jar,/j/l.jar"}) == [
        Path("/a/b/x.zip"), Path("/a/c/y.py"), Path("/data/ckpt"), Path("/j/k.jar"), Path("/j/l.jar")]


def test_spark_submit_in_the_pod_is_client_mode_bound_to_the_pod() -> None:
    argv = ["/h/spark-submit", "--master", "k8s://https://127.0.0.1:6443", "--deploy-mode", "cluster",
            "--name", "j", "--conf", "spark.driver.host=10.244.0.1",
            "--conf", "spark.driver.extraJavaOptions=-Da=b -XX:SharedArchiveFile=/c.jsa -Xshare:auto",
            "/jobs/j.py", "--conf", "/ckpt"]
    got = pod_submit_args(argv, "k8s://https://10.244.0.1:6443", tail=3, python="/py/bin/python3.11")
    assert got[-3:] == ["/jobs/j.py", "--conf", "/ckpt"], "the script's own arguments untouched"
    pairs = dict(zip(got[:-3:2], got[1:-3:2], strict=True))
    assert pairs["--master"] == "k8s://https://10.244.0.1:6443" and pairs["--deploy-mode"] == "client"
    confs = [v for k, v in zip(got[:-3:2], got[1:-3:2], strict=True) if k == "--conf"]
    assert "spark.driver.host=$(POD_IP)" in confs and "spark.driver.host=10.244.0.1" not in confs
    assert "spark.kubernetes.driver.pod.name=$(POD_NAME)" in confs
    assert "spark.pyspark.driver.python=/py/bin/python3.11" in confs
    assert "spark.driver.extraJavaOptions=-Da=b" in confs, "this host's class-data archives left out"


def test_the_job_restarts_its_driver_pod_and_mounts_the_host_paths() -> None:
    job = manifest(name="t-driver", tag="t", label="streamchaos-job", image="img", account="sa",
                   command=["java", "-cp", "x"], workdir=Path("/run/jobs/j"), env={"A": "1"},
                   folders=[Path("/run")], files=[Path("/k/token")])
    spec = job["spec"]
    assert job["kind"] == "Job" and spec["backoffLimit"] >= 1 and spec["podReplacementPolicy"] == "Failed"
    pod = spec["template"]["spec"]
    assert pod["restartPolicy"] == "Never" and spec["template"]["metadata"]["labels"]["spark-role"] == "driver"
    container = pod["containers"][0]
    assert [m["mountPath"] for m in container["volumeMounts"]] == ["/run", "/k/token"]
    env = {e["name"]: e for e in container["env"]}
    assert env["POD_IP"]["valueFrom"]["fieldRef"]["fieldPath"] == "status.podIP" and env["A"]["value"] == "1"


def test_delete_driver_pod_checks_its_grace_and_needs_a_driver_pod() -> None:
    with pytest.raises(FaultSpecError, match="grace"):
        DeleteDriverPod.parse(kwargs={"after": 5, "grace": -1})
    assert DeleteDriverPod.parse(kwargs={"after": 5, "grace": 0}).params["grace"] == 0
    fault = DeleteDriverPod(SimpleNamespace(job=object()))  # type: ignore[arg-type]  # a client-mode job
    with pytest.raises(RuntimeError, match="deploy_mode='cluster'"):
        fault._job()
    assert not isinstance(object(), DriverPods)


def test_a_client_mode_run_is_refused_the_driver_pods_delete_before_it_starts() -> None:
    spec = DeleteDriverPod.parse(kwargs={"after": 5})
    with pytest.raises(ValueError, match=r"^@delete_driver_pod: the driver of a client-mode job runs on this host.*"
                                         r"fix: JobSetup\(deploy_mode='cluster'\)"):
        check_run([spec], checkpoint="local")
    check_run([spec], checkpoint="local", deploy_mode="cluster")
