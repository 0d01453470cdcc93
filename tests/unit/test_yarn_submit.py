"""spark-submit --master yarn as YarnSubmitter.prepare builds it (spark/yarn.py), and what the mini cluster
and an attached one add to a submission (no JVM: nothing is started)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_streamchaos.spark.launcher import LaunchError, spark_home
from pytest_streamchaos.spark.yarn import YarnSubmitter
from pytest_streamchaos.stack.yarn.attach import AttachedYarn
from pytest_streamchaos.stack.yarn.cluster import LocalYarnCluster
from pytest_streamchaos.stack.yarn.rest import ClusterInfo, ResourceManagerApi

JOB = Path(__file__).resolve().parents[1] / "integration" / "jobs" / "kafka_format_passthrough.py"


def conf_of(argv: list[str]) -> dict[str, str]:
    return dict(argv[i + 1].split("=", 1) for i, a in enumerate(argv) if a == "--conf")


def test_the_mini_cluster_submits_with_local_jars_archives_and_its_conf_dir(tmp_path: Path) -> None:
    yarn = LocalYarnCluster(tmp_path / "yarn")
    home = spark_home()
    env, conf = yarn.submit_settings(home)
    assert env["HADOOP_CONF_DIR"] == env["YARN_CONF_DIR"] == str(tmp_path / "yarn" / "conf")
    assert all(a.startswith("local:") for a in env["PYSPARK_ARCHIVES_PATH"].split(","))  # nothing uploaded
    assert conf["spark.yarn.jars"] == f"local:{home / 'jars'}/*"


def attached(conf_dir: Path) -> AttachedYarn:
    """An attachment as :func:`~pytest_streamchaos.stack.yarn.attach.attach` makes one (nothing contacted here)."""
    info = ClusterInfo(1, "STARTED", "ACTIVE", "3.5.0", 1)
    return AttachedYarn(conf_dir, {}, ResourceManagerApi("127.0.0.1:1"), info)


def test_client_and_cluster_mode_commands(tmp_path: Path) -> None:
    yarn = attached(tmp_path)
    submitter = YarnSubmitter(yarn, tmp_path / "jobs", conf={"spark.executor.instances": "3"})
    client = submitter.prepare(JOB, env={"STREAMCHAOS_INPUT_TOPIC": "in"}, args=["a"])
    argv = client.argv
    assert argv[1:5] == ["--master", "yarn", "--deploy-mode", "client"] and argv[-2:] == [str(JOB), "a"]
    conf = conf_of(argv)
    assert conf["spark.yarn.tags"] == client.tag and client.tag == client.tag.lower()  # YARN keeps tags lower-case
    assert conf["spark.executor.instances"] == "3"  # the submitter's conf over the defaults
    assert "spark-sql-kafka-0-10" in conf["spark.jars"]  # Spark's own Kafka connector, as on standalone
    assert conf["spark.eventLog.dir"] == (client.workdir / "eventlog").as_uri()
    assert client.env["HADOOP_CONF_DIR"] == str(tmp_path) and client.env["STREAMCHAOS_INPUT_TOPIC"] == "in"
    assert "spark.yarn.appMasterEnv.STREAMCHAOS_INPUT_TOPIC" not in conf
    cluster = submitter.prepare(JOB, deploy_mode="cluster", env={"STREAMCHAOS_INPUT_TOPIC": "in"})
    conf = conf_of(cluster.argv)
    assert conf["spark.yarn.appMasterEnv.STREAMCHAOS_INPUT_TOPIC"] == "in"  # the driver runs in the AM's container
    assert cluster.tag != client.tag and cluster.workdir != client.workdir


def test_bad_input_is_one_line_before_anything_starts(tmp_path: Path) -> None:
    yarn = attached(tmp_path)
    submitter = YarnSubmitter(yarn, tmp_path / "jobs")
    with pytest.raises(LaunchError, match="deploy_mode='standalone'.*'client'.*'cluster'"):
        submitter.prepare(JOB, deploy_mode="standalone")
    with pytest.raises(LaunchError, match="not an existing .py file"):
        submitter.prepare(tmp_path / "nope.py")
    assert not (tmp_path / "jobs").exists()
