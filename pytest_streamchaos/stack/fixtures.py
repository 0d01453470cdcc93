"""Stack fixtures: the session-scoped clusters and brokers, handed to each test healed.

The expensive parts (JVMs, containers, the broker process) live for the whole session, in one
:class:`Stacks` registry that starts each on first use and stops them all at session end; the
function-scoped ``spark_cluster`` / ``kafka`` fixtures heal them before each test so that a test
which killed a worker or took a broker down does not poison the next one.

The backend is the session's (``--chaos-backend``), or a test's own with
``@pytest.mark.chaos(backend="docker")``: one session can run tests on both, each backend's stack
started once.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor, wait
from typing import TYPE_CHECKING, TypeVar

import pytest

from pytest_streamchaos import storages
from pytest_streamchaos.managers import DEFAULT, MANAGERS
from pytest_streamchaos.protocols import StorageService
from pytest_streamchaos.settings import BACKENDS, KAFKA_LINKS_KEY, SETTINGS_KEY, Settings
from pytest_streamchaos.stack.base import KafkaCluster, SparkCluster
from pytest_streamchaos.stack.host import Host, activate
from pytest_streamchaos.stack.service import Service

if TYPE_CHECKING:
    from pytest_streamchaos.stack.docker.engine import DockerSession
    from pytest_streamchaos.stack.standalone.cluster import StandaloneCluster


S = TypeVar("S", bound=Service)


@pytest.fixture(scope="session")
def streamchaos_settings(pytestconfig: pytest.Config) -> Settings:
    """The session's resolved plugin settings (options > ini > defaults)."""
    return pytestconfig.stash[SETTINGS_KEY]


class Stacks:
    """The session's stacks by backend, started on first use, stopped by :meth:`close`; and the host
    resources they share (:attr:`host`: ports, reaper, job group), closed last."""

    def __init__(self, settings: Settings, tmp_path_factory: pytest.TempPathFactory,
                 project: tuple[str, ...] = (), progress: Callable[[str], None] | None = None,
                 host: Host | None = None, kafka_links: bool = True) -> None:
        """``project``: the user's project directories (pytest's rootdir), readable by the nodes.
        ``progress``: where a line goes while something slow happens once (jars resolved, a binary built).
        ``host``: the session's host resources (a new :class:`~.host.Host` when None).
        ``kafka_links``: a test of the session may fault the job's Kafka links, so Toxiproxy is built for them
        if it is not yet (False: the links go direct unless it is built already; :mod:`.kraft.links`)."""
        self.settings, self.tmp, self.project, self.progress = settings, tmp_path_factory, project, progress
        self.kafka_links = kafka_links
        self.host = host or Host()
        self._spark: dict[tuple[str, str, bool], SparkCluster] = {}
        self._kafka: dict[str, KafkaCluster] = {}
        self._services: dict[tuple[str, str], StorageService] = {}
        self._started: list[Service] = []  # in start order, stopped newest first
        self._docker: DockerSession | None = None
        self._docker_error: str | None = None

    def docker(self) -> DockerSession:
        """The session's :class:`~.docker.engine.DockerSession` (labels, network, clean-up);
        ``pytest.skip`` with the reason when no daemon answers (``--chaos-backend docker`` fails
        earlier, at start: plugin.pytest_configure)."""
        if self._docker is None and self._docker_error is None:
            from pytest_streamchaos.stack.base import StackError
            from pytest_streamchaos.stack.docker.engine import DockerSession, connect

            try:
                self._docker = DockerSession(connect(), host=self.host).open()
            except StackError as exc:
                self._docker_error = str(exc)
        if self._docker is None:
            pytest.skip(f"docker backend: {self._docker_error}")
        return self._docker

    def spark(self, backend: str, *, ha: bool = False, manager: str = DEFAULT) -> SparkCluster:
        """The backend's Spark cluster of cluster manager ``manager`` (a name of
        :data:`~pytest_streamchaos.managers.MANAGERS`; ``ha``: two masters and ZooKeeper), made by the manager's
        factory on first use and kept for the session."""
        if manager not in MANAGERS:
            raise pytest.UsageError(f"spark={manager!r}: valid cluster managers: {', '.join(map(repr, MANAGERS))}")
        key = (manager, backend, ha)
        if key not in self._spark:
            entry = MANAGERS[manager]
            cluster = entry.factory()(self, backend, ha)
            if not isinstance(cluster, SparkCluster) or not isinstance(cluster, entry.service_protocol()):
                raise TypeError(f"the {manager!r} manager's factory made {cluster!r}, not a {entry.protocol}")
            self._spark[key] = cluster
        return self._spark[key]

    def standalone(self, backend: str, *, ha: bool = False) -> StandaloneCluster:
        """The backend's Spark standalone cluster (``ha``: two masters and ZooKeeper), started on first use."""
        from pytest_streamchaos.stack.standalone.cluster import StandaloneCluster

        cluster = self.spark(backend, ha=ha, manager="standalone")
        if not isinstance(cluster, StandaloneCluster):  # the standalone manager's factory makes nothing else
            raise TypeError(f"the standalone manager made {cluster!r}")
        return cluster

    def kafka(self, backend: str) -> KafkaCluster:
        """The backend's Kafka cluster, started on first use (with the session's fixed bootstrap port), or the
        existing one ``--chaos-kafka-bootstrap`` names (attached: nothing started)."""
        if backend not in self._kafka and self.settings.kafka_bootstrap:  # an existing Kafka: nothing started
            from pytest_streamchaos.stack.kraft.attached import attach_kafka

            self._kafka[backend] = self.start(attach_kafka(self.settings.kafka_bootstrap))
            if self.settings.kafka_port:
                self._kafka[backend].listen(self.settings.kafka_port)
        if backend not in self._kafka:
            s = self.settings
            workdir = self.tmp.mktemp(f"kafka-{backend}")
            cluster: KafkaCluster
            if backend == "docker":
                from pytest_streamchaos.stack.docker.kafka import DockerKafkaCluster

                cluster = DockerKafkaCluster(workdir, s.kafka_brokers, session=self.docker(), image=s.docker_image,
                                             java_home=s.java_home, start_timeout=s.start_timeout,
                                             progress=self.progress, host=self.host)
            else:
                from pytest_streamchaos.stack.local import LocalKafkaCluster

                cluster = LocalKafkaCluster(workdir, s.kafka_brokers, java_home=s.java_home,
                                            start_timeout=s.start_timeout, progress=self.progress, host=self.host,
                                            build_links=self.kafka_links)
            self._kafka[backend] = self.start(cluster)
            if s.kafka_port:  # the session's fixed bootstrap port for jobs that hard-code it
                cluster.listen(s.kafka_port)
        return self._kafka[backend]

    def kafka_and_spark(self, backend: str, *, ha: bool = False, manager: str = DEFAULT) -> None:
        """Start the backend's Kafka and its Spark standalone cluster side by side (the cluster in a thread of its
        own while Kafka starts in this one) when neither is started yet: a chaos test needs both, and one after
        the other they cost the sum (measured: Kafka 16.6 s, then the cluster 12.0 s; docs/measurements.md). A
        failure of either is raised once both are done; what did start is kept and stopped at session end.
        Nothing happens when either is started already, Kafka is an existing one, or the manager is not
        standalone (the others' clusters start as before, on first use)."""
        if manager != "standalone" or self.settings.kafka_bootstrap or backend in self._kafka \
                or (manager, backend, ha) in self._spark:
            return
        if backend == "docker":
            self.docker()  # the session's, made once here (or the skip), not raced for by the two starts
        # pytest's temp path factory makes (and with --basetemp first empties) its base directory on first use, not
        # thread-safely: made here, before the two starts each make their folder in it
        self.tmp.getbasetemp()
        with ThreadPoolExecutor(1, thread_name_prefix="streamchaos-spark-start") as pool:
            spark = pool.submit(self.spark, backend, ha=ha, manager=manager)
            try:
                self.kafka(backend)
            except BaseException:
                wait([spark])  # the cluster's start ends too (kept, stopped at session end); Kafka's error wins
                raise
            spark.result()

    def service(self, storage: str, backend: str) -> StorageService:
        """The backend's service of the checkpoint storage ``storage`` (a name of
        :data:`~pytest_streamchaos.storages.STORAGES`), made and started by the entry's factory on first use and
        kept for the session (its factory skips, or raises a :class:`~.base.StackError` naming the fix, on a
        backend that has none)."""
        key = (storage, backend)
        if key not in self._services:
            self._services[key] = storages.get(storage).factory()(self, backend)
        return self._services[key]

    def start(self, stack: S) -> S:
        """Start ``stack`` and keep it for the session (stopped by :meth:`close`, newest first); a stack that
        fails to start is stopped at once."""
        try:
            stack.start()
        except BaseException:
            stack.stop()
            raise
        self._started.append(stack)
        return stack

    def close(self) -> None:
        """Stop every stack (newest first), then remove the docker session's network. Idempotent."""
        errors = []
        self._spark.clear()
        self._kafka.clear()
        self._services.clear()
        while self._started:
            stack = self._started.pop()
            try:
                stack.stop()
            except Exception as exc:  # stop the others regardless
                errors.append(f"{stack!r}: {exc}")
        if self._docker is not None:
            self._docker.close()
            self._docker = None
        self.host.close()
        if errors:
            raise RuntimeError("could not stop every stack: " + "; ".join(errors))


def standalone_cluster(stacks: Stacks, backend: str, ha: bool) -> SparkCluster:
    """The session's Spark standalone cluster on ``backend`` (the ``standalone`` manager's factory)."""
    workdir = stacks.tmp.mktemp(f"spark{'-ha' if ha else ''}-{backend}")
    cluster: SparkCluster
    if backend == "docker":
        from pytest_streamchaos.stack.docker.spark import DockerSparkCluster

        cluster = DockerSparkCluster.from_settings(stacks.settings, workdir, ha=ha, session=stacks.docker(),
                                                   shared=(stacks.tmp.getbasetemp(),), project=stacks.project,
                                                   host=stacks.host)
    else:
        from pytest_streamchaos.stack.local import LocalSparkCluster

        cluster = LocalSparkCluster.from_settings(stacks.settings, workdir, ha=ha, host=stacks.host)
    return stacks.start(cluster)


@pytest.fixture(scope="session")
def streamchaos_stacks(streamchaos_settings: Settings, tmp_path_factory: pytest.TempPathFactory,
                       pytestconfig: pytest.Config) -> Iterator[Stacks]:
    """Every stack of the session, by backend (see :class:`Stacks`); its host is the session's current one."""
    stacks = Stacks(streamchaos_settings, tmp_path_factory, project=(str(pytestconfig.rootpath),),
                    progress=progress_writer(pytestconfig),
                    kafka_links=pytestconfig.stash.get(KAFKA_LINKS_KEY, True))
    try:
        with activate(stacks.host):
            yield stacks
    finally:
        stacks.close()


@pytest.fixture(scope="session")
def streamchaos_host(streamchaos_stacks: Stacks) -> Host:
    """The session's host resources (:class:`~.host.Host`): the ports it handed out, its reaper, the job
    group, the faults' host-wide machinery."""
    return streamchaos_stacks.host


def manager_of(request: pytest.FixtureRequest, settings: Settings) -> str:
    """The test's Spark cluster manager: ``@pytest.mark.chaos(spark=...)``, else the session's."""
    mark = request.node.get_closest_marker("chaos")
    return mark.kwargs.get("spark", settings.spark) if mark is not None else settings.spark


def backend_of(request: pytest.FixtureRequest, settings: Settings) -> str:
    """The test's backend: ``@pytest.mark.chaos(backend=...)``, else the session's."""
    mark = request.node.get_closest_marker("chaos")
    backend = mark.kwargs.get("backend", settings.backend) if mark is not None else settings.backend
    if backend not in BACKENDS:
        raise pytest.UsageError(f"{request.node.nodeid}: @chaos(backend={backend!r}): valid backends: "
                                f"{', '.join(map(repr, BACKENDS))}")
    return backend


@pytest.fixture(scope="session")
def streamchaos_spark_session(streamchaos_stacks: Stacks, streamchaos_settings: Settings) -> SparkCluster:
    """The session backend's Spark standalone cluster (started on first use, stopped at session end)."""
    return streamchaos_stacks.standalone(streamchaos_settings.backend, ha=streamchaos_settings.ha)


@pytest.fixture(scope="session")
def streamchaos_kafka_session(streamchaos_stacks: Stacks, streamchaos_settings: Settings) -> KafkaCluster:
    """The session backend's Kafka cluster (started on first use, stopped at session end)."""
    return streamchaos_stacks.kafka(streamchaos_settings.backend)


def session_ha(settings: Settings, manager: str) -> bool:
    """Whether a test's cluster not marked ``ha=True`` is the highly available one: ``--chaos-ha``, where the
    manager has HA."""
    return settings.ha and MANAGERS[manager].ha


@pytest.fixture
def spark_cluster(streamchaos_stacks: Stacks, streamchaos_settings: Settings,
                  request: pytest.FixtureRequest) -> SparkCluster:
    """The test's Spark cluster, healed to its configured shape before the test."""
    manager = manager_of(request, streamchaos_settings)
    cluster = streamchaos_stacks.spark(backend_of(request, streamchaos_settings),
                                       ha=session_ha(streamchaos_settings, manager), manager=manager)
    cluster.heal(timeout=streamchaos_settings.start_timeout)
    return cluster


@pytest.fixture
def spark_cluster_ha(streamchaos_stacks: Stacks, streamchaos_settings: Settings,
                     request: pytest.FixtureRequest) -> SparkCluster:
    """A highly available cluster (two masters, ZooKeeper recovery), started only when a test asks for
    it (``@pytest.mark.chaos(ha=True)`` or this fixture), healed before the test."""
    cluster = streamchaos_stacks.spark(backend_of(request, streamchaos_settings), ha=True,
                                       manager=manager_of(request, streamchaos_settings))
    cluster.heal(timeout=streamchaos_settings.start_timeout)
    return cluster


@pytest.fixture
def kafka(streamchaos_stacks: Stacks, streamchaos_settings: Settings, request: pytest.FixtureRequest) -> KafkaCluster:
    """The session's Kafka cluster (real brokers), healed before the test: every broker up and in
    sync, leadership on the preferred replicas, no fault left on the job's links. Topics are the
    test's to create (``kafka.create_topic(name, partitions)``: exactly that name, re-created if an
    earlier test left one)."""
    backend = backend_of(request, streamchaos_settings)
    if "chaos" in request.fixturenames:  # the test's Spark cluster starts beside Kafka (Stacks.kafka_and_spark)
        mark = request.node.get_closest_marker("chaos")
        manager = manager_of(request, streamchaos_settings)
        # the cluster the chaos fixture asks for: spark_cluster_ha when marked so, else spark_cluster's
        marked = bool(mark.kwargs.get("ha", False)) if mark is not None else False
        streamchaos_stacks.kafka_and_spark(backend, manager=manager,
                                           ha=marked or session_ha(streamchaos_settings, manager))
    cluster = streamchaos_stacks.kafka(backend)
    cluster.heal()
    return cluster


def progress_writer(config: pytest.Config) -> Callable[[str], None]:
    """A line on the terminal while the session does something slow once (resolving jars, building a
    binary), shown even while pytest captures the test's output."""
    def write(line: str) -> None:
        capman = config.pluginmanager.getplugin("capturemanager")
        reporter = config.pluginmanager.getplugin("terminalreporter")
        if reporter is None:
            print(line, file=sys.stderr, flush=True)
            return
        if capman is not None:
            with capman.global_and_fixture_disabled():
                reporter.write_line(line)
        else:
            reporter.write_line(line)

    return write


def service_fixture(entry: storages.CheckpointStorage) -> Callable[..., StorageService]:
    """The fixture of ``entry``'s service, named by its ``fixture``: the session's service, started on first use
    (:meth:`Stacks.service`), healed before the test (every node up, no fault left on the job's way in)."""
    def fixture(streamchaos_stacks: Stacks, streamchaos_settings: Settings,
                request: pytest.FixtureRequest) -> StorageService:
        service = streamchaos_stacks.service(entry.name, backend_of(request, streamchaos_settings))
        service.heal(timeout=streamchaos_settings.start_timeout)
        return service

    fixture.__name__ = fixture.__qualname__ = str(entry.fixture)
    fixture.__doc__ = (f"The session's {entry.title} ({entry.help}), healed before the test; "
                       f"``JobSetup(checkpoint={entry.name!r})`` puts a run's checkpoint there.")
    return pytest.fixture(name=entry.fixture)(fixture)


def service_fixtures() -> types.ModuleType:
    """A plugin holding the fixture of every storage's service (:func:`service_fixture`), made from the registry as
    it is when the session is configured (``hdfs``, ``object_store``): a new storage's fixture is its entry's."""
    holder = types.ModuleType(f"{__name__}.services")
    holder.__doc__ = service_fixtures.__doc__
    for entry in storages.STORAGES.values():
        if entry.fixture is not None:
            setattr(holder, entry.fixture, service_fixture(entry))
    return holder
