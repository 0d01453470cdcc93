"""spark-submit --master yarn as the YARN backend's launcher builds it (stack/yarn/launcher.py) through the
runner's own JobLauncher, and what the mini cluster and an attached one add (no JVM: nothing is started)."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from pytest_streamchaos.spark.launcher import JobLauncher, LaunchError, spark_home
from pytest_streamchaos.stack.base import SparkCluster
from pytest_streamchaos.stack.capabilities import (
    ActiveMaster,
    ExecutorKill,
    MasterKill,
    ResourceManagerRestart,
    SubmittedDrivers,
    WorkerKill,
)
from pytest_streamchaos.stack.kraft.attached import AttachedKafka
from pytest_streamchaos.stack.yarn.attach import AttachedYarn
from pytest_streamchaos.stack.yarn.cluster import LocalYarnCluster
from pytest_streamchaos.stack.yarn.launcher import YarnJob
from pytest_streamchaos.stack.yarn.rest import ClusterInfo, ResourceManagerApi
from pytest_streamchaos.stack.yarn.spark import YarnSparkCluster

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


def attached(conf_dir: Path) -> YarnSparkCluster:
    """An attachment as ``attach`` makes one (nothing contacted here), behind the stack's interface."""
    info = ClusterInfo(1, "STARTED", "ACTIVE", "3.5.0", 1)
    return YarnSparkCluster(AttachedYarn(conf_dir, {}, ResourceManagerApi("127.0.0.1:1"), info))


def test_client_and_cluster_mode_commands(tmp_path: Path) -> None:
    cluster = attached(tmp_path)
    assert isinstance(cluster, SparkCluster) and cluster.master_url == "yarn" and not isinstance(cluster, WorkerKill)
    launcher = JobLauncher.for_cluster(cluster, tmp_path / "jobs", conf={"spark.executor.instances": "3"})
    client = launcher.prepare(JOB, env={"STREAMCHAOS_INPUT_TOPIC": "in"}, args=["a"])
    assert isinstance(client, YarnJob) and client.deploy_mode == "client"
    argv = client.inner.argv
    assert argv[1:5] == ["--master", "yarn", "--deploy-mode", "client"] and argv[-2:] == [str(JOB), "a"]
    conf = conf_of(argv)
    assert conf["spark.yarn.tags"] == client.tag and client.tag == client.tag.lower()  # YARN keeps tags lower-case
    assert conf["spark.executor.instances"] == "3"  # the job's conf over YARN's defaults
    assert conf["spark.yarn.maxAppAttempts"] == "2"
    assert "spark-sql-kafka-0-10" in conf["spark.jars"]  # Spark's own Kafka connector, as on standalone
    assert conf["spark.eventLog.dir"] == (client.workdir / "eventlog").as_uri()
    assert client.inner.env["HADOOP_CONF_DIR"] == str(tmp_path) and client.inner.env["STREAMCHAOS_INPUT_TOPIC"] == "in"
    assert "spark.driver.port" in conf and "spark.yarn.appMasterEnv.STREAMCHAOS_INPUT_TOPIC" not in conf
    job = launcher.prepare(JOB, deploy_mode="cluster", env={"STREAMCHAOS_INPUT_TOPIC": "in"})
    conf = conf_of(job.inner.argv)
    assert conf["spark.yarn.appMasterEnv.STREAMCHAOS_INPUT_TOPIC"] == "in"  # the driver runs in the AM's container
    # the executors' Python path (the package's root: Spark's worker daemon module) for the AM's Python too
    assert conf["spark.yarn.appMasterEnv.PYTHONPATH"] == conf["spark.executorEnv.PYTHONPATH"]
    assert "spark.driver.port" not in conf and "spark.driver.host" not in conf  # the AM binds where YARN runs it
    assert job.pid is None and job.tag != client.tag and job.workdir != client.workdir


def test_bad_input_is_one_line_before_anything_starts(tmp_path: Path) -> None:
    launcher = JobLauncher.for_cluster(attached(tmp_path), tmp_path / "jobs")
    with pytest.raises(LaunchError, match="deploy_mode='standalone'.*'client'.*'cluster'"):
        launcher.prepare(JOB, deploy_mode="standalone")
    with pytest.raises(LaunchError, match="does not exist"):
        launcher.prepare(tmp_path / "nope.py")
    assert not (tmp_path / "jobs").exists()


def test_an_attached_cluster_has_no_daemon_to_kill_the_mini_cluster_has(tmp_path: Path) -> None:
    """What an attached YARN cannot do is a capability its class lacks, not a method that fails at run time."""
    cluster, mini = attached(tmp_path), YarnSparkCluster.mini(tmp_path / "yarn")
    for capability in (WorkerKill, MasterKill, ActiveMaster, ResourceManagerRestart):
        assert not isinstance(cluster, capability) and isinstance(mini, capability)
    assert not any(hasattr(cluster, m) for m in ("kill_worker", "restart_master", "active_master"))
    for capability in (ExecutorKill, SubmittedDrivers):  # through the RM's API, and spark-submit
        assert isinstance(cluster, capability) and isinstance(mini, capability)


def test_fault_kinds_refuse_what_the_cluster_cannot_give_before_the_job(tmp_path: Path) -> None:
    from pytest_streamchaos.faults.registry import parse, refused_by_stack

    cluster, kafka = attached(tmp_path), AttachedKafka("127.0.0.1:1")
    assert "WorkerKill" in (refused_by_stack(w := parse("kill_worker"), cluster, kafka) or "")
    assert refused_by_stack(parse("kill_executor"), cluster, kafka) is None  # through the API
    assert refused_by_stack(parse("kill_driver"), cluster, kafka) is None
    assert "cannot freeze" in (refused_by_stack(parse("pause", kwargs={"target": "executor"}), cluster, kafka) or "")
    assert refused_by_stack(w, YarnSparkCluster.mini(tmp_path / "yarn"), kafka) is None


def test_a_container_is_killed_through_the_api_never_paused(tmp_path: Path) -> None:
    from pytest_streamchaos.stack.yarn.rest import YarnContainer
    from pytest_streamchaos.stack.yarn.spark import ContainerExecutor

    sent: list[tuple[str, str]] = []

    class Api:
        def signal_container(self, cid: str, command: str) -> None:
            sent.append((cid, command))

    container = YarnContainer("container_1_0001_01_000002", "localhost:1", "RUNNING")
    e = ContainerExecutor(container, Api())  # type: ignore[arg-type]
    e.kill(signal.SIGKILL)
    e.kill(signal.SIGTERM)
    assert sent == [("container_1_0001_01_000002", "FORCEFUL_SHUTDOWN"), ("container_1_0001_01_000002",
                                                                          "GRACEFUL_SHUTDOWN")]
    with pytest.raises(Exception, match="cannot.*pause|not pause"):
        e.kill(signal.SIGSTOP)


def test_the_rm_restart_is_a_kind_of_its_own_family_refused_where_there_is_no_rm_to_restart(tmp_path: Path) -> None:
    """A new kind is its family module and one entry in FAMILIES: its mark, decorator and checks follow."""
    from pytest_streamchaos.faults import marks
    from pytest_streamchaos.faults.registry import parse, refused_by_stack
    from pytest_streamchaos.stack.local import LocalSparkCluster

    spec = parse("restart_resourcemanager", kwargs={"after": 10})
    assert "restart_resourcemanager" in marks.DECORATORS and spec.restart_after == 0.0
    kafka = AttachedKafka("127.0.0.1:1")
    assert refused_by_stack(spec, YarnSparkCluster.mini(tmp_path / "yarn"), kafka) is None
    assert "no --chaos-yarn-conf" in (refused_by_stack(spec, attached(tmp_path), kafka) or "")
    assert "YARN's mini cluster" in (refused_by_stack(spec, LocalSparkCluster(tmp_path / "spark"), kafka) or "")


def test_each_launch_is_a_new_application_under_the_jobs_tag() -> None:
    """A driver restarted in client mode submits a new application with the same tag: the handle follows it
    (faults and executors act on the current one), never an earlier launch's."""
    from types import SimpleNamespace

    from pytest_streamchaos.stack.yarn.rest import YarnApp

    apps: list[YarnApp] = []
    api = SimpleNamespace(apps=lambda tag: [a for a in apps if tag in a.tags])
    started: list[int] = []
    inner = SimpleNamespace(deploy_mode="client", start=lambda: started.append(1), alive=True)
    job = YarnJob(inner, api, "streamchaos-x", lambda app: [])  # type: ignore[arg-type]
    job._watcher = object()  # type: ignore[assignment]  # no RM to watch here
    job.start()
    assert job.app_id is None  # YARN has nothing yet: nothing cached
    apps.append(YarnApp("application_1_0001", "j", "RUNNING", "UNDEFINED", ("streamchaos-x",), started_time=1))
    assert job.app_id == "application_1_0001"
    job.start()  # the driver's restart
    assert job.app_id is None, "the earlier launch's application is not this launch's"
    apps.append(YarnApp("application_1_0002", "j", "RUNNING", "UNDEFINED", ("streamchaos-x",), started_time=2))
    assert job.app_id == "application_1_0002" and len(started) == 2


def test_connect_on_yarn_submits_its_server_to_yarn_and_runs_the_script_as_its_client(tmp_path: Path) -> None:
    """spark='connect-yarn': the Connect server is spark-submit --master yarn in client mode (the query's driver
    here, its executors YARN's containers, found by the application's tag), the script its client."""
    from pytest_streamchaos.stack.base import ConnectSession, SparkApp
    from pytest_streamchaos.stack.capabilities import ConnectServer
    from pytest_streamchaos.stack.connect import server
    from pytest_streamchaos.stack.connect.yarn import ConnectYarnSparkCluster

    yarn = attached(tmp_path)
    cluster = ConnectYarnSparkCluster(yarn, port=15999)
    assert cluster.manager == "connect-yarn" and cluster.master_url == "yarn"
    assert isinstance(cluster, ConnectServer) and isinstance(cluster, ExecutorKill)
    assert not isinstance(cluster, SubmittedDrivers)
    launcher = cluster.launcher(tmp_path / "jobs")
    assert launcher in yarn.launchers  # YARN finds the servers' executors among its jobs, and stops them with it
    job = launcher.prepare(SparkApp(script=JOB, name="orders", conf={"spark.executor.instances": "1"},
                                    env={"EXTRA": "1"}))
    assert isinstance(job, ConnectSession) and isinstance(job.server, YarnJob) and not job.alive
    argv = job.server.inner.argv
    assert argv[argv.index("--master") + 1] == "yarn" and argv[argv.index("--deploy-mode") + 1] == "client"
    assert argv[argv.index("--class") + 1] == server.SERVER_CLASS and argv[-1] == server.INTERNAL
    conf = conf_of(argv)
    assert conf["spark.yarn.tags"] == job.server.tag and conf["spark.connect.grpc.binding.port"] == "15999"
    assert conf["spark.executor.instances"] == "1" and conf["spark.yarn.maxAppAttempts"] == "2"
    assert job.server.inner.env["HADOOP_CONF_DIR"] == str(tmp_path) and job.server.inner.env["EXTRA"] == "1"
    assert job.client.env["SPARK_REMOTE"] == "sc://127.0.0.1:15999" and job.client.argv[1:] == [str(JOB)]
    assert launcher.yarn_jobs == [job.server] and job.server.pid is None  # not started
