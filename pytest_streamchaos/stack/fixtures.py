"""Stack fixtures: the session-scoped cluster and broker, handed to each test healed.

The expensive parts (JVMs, the broker process) live for the whole session; the function-scoped
``spark_cluster`` / ``kafka`` fixtures heal them before each test so that a test which killed a
worker or took a broker down does not poison the next one.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pytest_streamchaos.settings import SETTINGS_KEY, Settings


@pytest.fixture(scope="session")
def streamchaos_settings(pytestconfig: pytest.Config) -> Settings:
    """The session's resolved plugin settings (options > ini > defaults)."""
    return pytestconfig.stash[SETTINGS_KEY]


@pytest.fixture(scope="session")
def streamchaos_docker(streamchaos_settings: Settings) -> Iterator:
    """The docker backend's share of the daemon (labels, network, clean-up); None on other backends."""
    if streamchaos_settings.backend != "docker":
        yield None
        return
    from pytest_streamchaos.stack.docker.engine import DockerSession, connect

    session = DockerSession(connect())
    try:
        yield session.open()
    finally:
        session.close()


def _session_cluster(settings: Settings, tmp_path_factory: pytest.TempPathFactory, docker, *, ha: bool) -> Iterator:
    workdir = tmp_path_factory.mktemp("spark-ha" if ha else "spark")
    if docker is not None:
        from pytest_streamchaos.stack.docker.spark import DockerSparkCluster

        cluster = DockerSparkCluster.from_settings(settings, workdir, ha=ha, session=docker,
                                                   shared=(tmp_path_factory.getbasetemp(),))
    else:
        from pytest_streamchaos.stack.spark_local import LocalSparkCluster

        cluster = LocalSparkCluster.from_settings(settings, workdir, ha=ha)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="session")
def streamchaos_spark_session(streamchaos_settings: Settings, tmp_path_factory: pytest.TempPathFactory,
                              streamchaos_docker):
    """The session's Spark standalone cluster (started on first use, stopped at session end)."""
    yield from _session_cluster(streamchaos_settings, tmp_path_factory, streamchaos_docker, ha=streamchaos_settings.ha)


@pytest.fixture
def spark_cluster(streamchaos_spark_session, streamchaos_settings: Settings) -> Iterator:
    """The Spark cluster, healed to its configured shape before the test."""
    streamchaos_spark_session.heal(timeout=streamchaos_settings.start_timeout)
    yield streamchaos_spark_session


@pytest.fixture(scope="session")
def streamchaos_spark_ha_session(streamchaos_settings: Settings, tmp_path_factory: pytest.TempPathFactory,
                                 streamchaos_docker):
    """A second, highly available cluster (two masters + ZooKeeper), started only when a test asks
    for it (``@pytest.mark.chaos(ha=True)`` or the ``spark_cluster_ha`` fixture)."""
    yield from _session_cluster(streamchaos_settings, tmp_path_factory, streamchaos_docker, ha=True)


@pytest.fixture
def spark_cluster_ha(streamchaos_spark_ha_session, streamchaos_settings: Settings) -> Iterator:
    """The HA cluster (two masters, ZooKeeper recovery), healed before the test."""
    streamchaos_spark_ha_session.heal(timeout=streamchaos_settings.start_timeout)
    yield streamchaos_spark_ha_session


@pytest.fixture(scope="session")
def streamchaos_kafka_session(streamchaos_settings: Settings, tmp_path_factory: pytest.TempPathFactory,
                              streamchaos_docker):
    """The session's embedded Kafka cluster (started on first use, stopped at session end)."""
    kwargs = {"brokers": streamchaos_settings.brokers, "workdir": tmp_path_factory.mktemp("kafka"),
              "bootstrap_port": streamchaos_settings.kafka_port or None}
    if streamchaos_docker is not None:
        from pytest_streamchaos.stack.docker.kafka import DockerKafkaCluster

        cluster = DockerKafkaCluster(session=streamchaos_docker, **kwargs)
    else:
        from pytest_streamchaos.stack.kafka_local import LocalKafkaCluster

        cluster = LocalKafkaCluster(**kwargs)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def kafka(streamchaos_kafka_session, request: pytest.FixtureRequest):
    """The Kafka cluster, healed (all brokers up, no delays), with topic names unique to this test."""
    streamchaos_kafka_session.heal()
    yield streamchaos_kafka_session.for_test(request.node.nodeid)
