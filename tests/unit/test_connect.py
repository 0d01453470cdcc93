"""Spark Connect as a cluster manager (no JVM): the registry of cluster managers, Connect's launcher (the
server's spark-submit and the client's command), the server's jars by Spark line, and the Connect faults'
refusals off Connect (and kill_driver's on it)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from pytest_streamchaos import managers, settings
from pytest_streamchaos.faults.registry import kind_of, parse, refused_by_stack
from pytest_streamchaos.prepare import optional, profile_steps, profiles
from pytest_streamchaos.stack.base import ConnectSession, SparkApp
from pytest_streamchaos.stack.connect import server
from pytest_streamchaos.stack.connect.cluster import ConnectSparkCluster
from pytest_streamchaos.stack.connect.launcher import ConnectLauncher
from pytest_streamchaos.stack.driver.launcher import DriverSite
from pytest_streamchaos.stack.host import Host
from pytest_streamchaos.stack.local import LocalKafkaCluster, LocalSparkCluster

JOB = Path(__file__).resolve().parents[1] / "chaos" / "jobs" / "connect" / "orders_filter.py"


def test_one_registry_names_the_cluster_managers_everywhere():
    spark = next(o for o in settings.options() if o.name == "spark")
    assert spark.choices == tuple(managers.MANAGERS) == ("standalone", "yarn", "connect", "connect-yarn", "k8s")
    assert all(f"'{m}'" in spark.help for m in managers.MANAGERS)
    assert {m: managers.MANAGERS[m].factory().__module__.rpartition(".")[2] for m in managers.MANAGERS} == {
        "standalone": "fixtures", "yarn": "spark", "connect": "cluster", "connect-yarn": "yarn",
        "k8s": "spark"}
    # a manager's own preparation is a profile of its own, and not in the default one
    assert set(optional()) == {"yarn", "connect", "k8s", "k8s-image"} and profiles()["connect"][-1] == "connect"
    assert "connect" not in profile_steps(["all"]) and "connect" in profile_steps(["connect"])
    assert {"connect", "yarn"} <= set(profile_steps(["connect-yarn"]))


def test_an_unknown_manager_is_refused_at_collection(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
        import pytest
        @pytest.mark.chaos(spark="conect")
        def test_x(): pass
    """)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.stderr.fnmatch_lines(["*spark='conect' (did you mean 'connect'?): valid cluster managers: 'standalone', "
                                 "'yarn', 'connect'*"])


def _clusters(tmp_path: Path) -> tuple[LocalSparkCluster, ConnectSparkCluster, LocalKafkaCluster]:
    """The real classes, built and never started: what they serve is their class's."""
    standalone = LocalSparkCluster(tmp_path / "spark")
    return standalone, ConnectSparkCluster(standalone, port=15002), LocalKafkaCluster(tmp_path / "kafka")


@pytest.mark.parametrize("kind", ["kill_connect_server", "kill_client", "kill_foreachbatch_worker"])
def test_the_connect_faults_are_refused_off_connect_in_one_line(kind, tmp_path):
    standalone, connect, kafka = _clusters(tmp_path)
    spec = parse(kind, (), {"after": 5})
    why = refused_by_stack(spec, standalone, kafka)
    assert why is not None and "\n" not in why and "spark='connect'" in why and "ConnectServer" in why
    assert refused_by_stack(spec, connect, kafka) is None


def test_kill_driver_on_connect_names_the_two_faults_it_could_mean(tmp_path):
    standalone, connect, kafka = _clusters(tmp_path)
    spec = parse("kill_driver", (), {"after": 5})
    why = refused_by_stack(spec, connect, kafka)
    assert why is not None and "@kill_connect_server" in why and "@kill_client" in why
    assert refused_by_stack(spec, standalone, kafka) is None


def test_the_server_kill_restarts_by_default_and_the_client_kill_does_not():
    assert parse("kill_connect_server", (), {"after": 5}).restart_after == 0.0
    assert parse("kill_client", (), {"after": 5}).restart_after is None


def test_a_server_kill_gives_the_client_time_for_the_retry_that_finds_the_new_server():
    """pyspark's client retries a broken call on its own schedule; a server back after its fifth retry (17 s) is
    found at the sixth (68 s): the load after the kill covers it and the resubmission, not only Spark's 60 s."""
    from pyspark.sql.connect.client.retries import DefaultPolicy

    from pytest_streamchaos.faults.families.connect import CLIENT_SECOND_LATE_RETRY_S, RESUBMIT_S
    from pytest_streamchaos.faults.timeline import RECOVERY_WINDOW_S, load_seconds, plan

    policy, waited, moments = DefaultPolicy(), 0.0, []
    for i in range(6):
        waited += min(policy.initial_backoff * policy.backoff_multiplier ** i, policy.max_backoff) / 1000
        moments.append(round(waited, 2))
    assert moments[-2:] == [17.05, CLIENT_SECOND_LATE_RETRY_S]
    kill = parse("kill_connect_server", (), {"after": 8})
    least = kind_of(kill).least_recovery_window
    assert least == CLIENT_SECOND_LATE_RETRY_S + RESUBMIT_S > RECOVERY_WINDOW_S
    assert load_seconds(plan([kill]), None, least_window=least)[0] == 8 + least
    assert kind_of(parse("kill_client", (), {"after": 8})).least_recovery_window == 0.0


def _conf(argv: list[str]) -> dict[str, str]:
    return dict(argv[i + 1].split("=", 1) for i, a in enumerate(argv) if a == "--conf")


def test_the_launcher_makes_a_server_on_the_cluster_and_the_script_its_client(tmp_path):
    site = DriverSite(master_url="spark://127.0.0.1:7077", driver_host="127.0.0.1", host=Host())
    launcher = ConnectLauncher(site, tmp_path / "jobs", port=15999)
    job = launcher.prepare(SparkApp(script=JOB, name="orders", args=("a1",), conf={"spark.sql.shuffle.partitions": "3"},
                                    env={"EXTRA": "1"}, jars=(tmp_path / "kafka.jar",)))
    assert isinstance(job, ConnectSession) and not job.alive  # prepared, not started
    argv = job.server.argv
    assert argv[argv.index("--class") + 1] == server.SERVER_CLASS and argv[-1] == server.INTERNAL
    assert argv[argv.index("--master") + 1] == "spark://127.0.0.1:7077"
    conf = _conf(argv)
    assert conf == dict(job.effective_conf)
    assert conf["spark.connect.grpc.binding.port"] == "15999"
    assert conf["spark.connect.grpc.binding.address"] == "127.0.0.1"
    assert conf["spark.sql.shuffle.partitions"] == "3" and str(tmp_path / "kafka.jar") in conf["spark.jars"]
    assert job.client.argv == [sys.executable, str(JOB), "a1"]
    assert job.client.env["SPARK_REMOTE"] == "sc://127.0.0.1:15999" == job.remote
    assert job.client.env["EXTRA"] == job.server.env["EXTRA"] == "1"
    # one directory: the server's relative paths and the client's are the same place; two logs
    assert job.workdir == job.server.workdir and job.log_path != job.server_log_path
    assert job.event_log_dir == job.server.event_log_dir


def test_cluster_deploy_mode_is_refused_on_connect(tmp_path):
    from pytest_streamchaos.errors import LaunchError

    site = DriverSite(master_url="spark://127.0.0.1:7077", driver_host="127.0.0.1", host=Host())
    with pytest.raises(LaunchError, match="the Connect server is the query's driver"):
        ConnectLauncher(site, tmp_path, port=15999).prepare(SparkApp(script=JOB, name="o", deploy_mode="cluster"))


def test_spark_4_ships_the_server_and_spark_3_5_gets_it_from_maven(tmp_path):
    import pyspark

    home = Path(pyspark.__file__).parent
    if pyspark.__version__.startswith("4."):
        assert server.shipped(home) is not None and server.server_jars(home) == []
    spark35 = tmp_path / "pyspark"
    (spark35 / "jars").mkdir(parents=True)
    for jar in ("spark-core_2.12-3.5.7.jar", "scala-library-2.12.18.jar"):
        (spark35 / "jars" / jar).write_bytes(b"")
    assert server.shipped(spark35) is None
    jars = server.jar_set(spark35)
    assert jars.coordinates == ("org.apache.spark:spark-connect_2.12:3.5.7",)
    assert "spark-core_2.12" in jars.skip_artifacts, "what pyspark ships is not fetched again"


def test_the_connect_cluster_is_the_standalone_one_with_connects_launcher():
    class Inner:
        manager = "standalone"
        workers = ["w0", "w1"]

    cluster = ConnectSparkCluster(Inner(), port=15002)  # type: ignore[arg-type]
    assert cluster.manager == "connect" and cluster.workers == ["w0", "w1"]
