"""Type-checked only (tests/unit/test_typecheck.py runs mypy on it, nothing imports it): the backends'
classes are what stack/base.py's protocols say the faults and the runner get, each cluster class fits the
capabilities it serves (stack/capabilities.py; which it serves: tests/unit/test_stack_interface.py), and both
placements are what the clusters take (stack/placement.py). A class that stops fitting a protocol fails the
type check, naming the member."""

from pytest_streamchaos.faults.context import OutputSeen
from pytest_streamchaos.observe.checkpoints import CheckpointWatcher
from pytest_streamchaos.observe.collector import Collector
from pytest_streamchaos.stack import capabilities as caps
from pytest_streamchaos.stack.base import (
    CheckpointView,
    ConnectSession,
    Executor,
    JobHandle,
    Launcher,
    LinkProxy,
    LinkScope,
    Node,
    PartitionView,
    SparkCluster,
)
from pytest_streamchaos.stack.capabilities import HdfsCluster
from pytest_streamchaos.stack.connect.cluster import ConnectSparkCluster
from pytest_streamchaos.stack.connect.job import ConnectJob
from pytest_streamchaos.stack.connect.launcher import ConnectLauncher
from pytest_streamchaos.stack.connect.yarn import ConnectMiniYarnSparkCluster, ConnectYarnSparkCluster
from pytest_streamchaos.stack.docker.placement import DockerPlacement
from pytest_streamchaos.stack.driver.job import SparkJob
from pytest_streamchaos.stack.driver.launcher import SubmitLauncher
from pytest_streamchaos.stack.hdfs.cluster import LocalHdfsCluster
from pytest_streamchaos.stack.hdfs.plan import HdfsNode
from pytest_streamchaos.stack.jobgroup import HostScope
from pytest_streamchaos.stack.kraft.admin import PartitionState
from pytest_streamchaos.stack.kraft.attached import AttachedKafka
from pytest_streamchaos.stack.kraft.cluster import KRaftCluster
from pytest_streamchaos.stack.kraft.plan import KafkaNode
from pytest_streamchaos.stack.local.placement import LocalPlacement
from pytest_streamchaos.stack.placement import Placement
from pytest_streamchaos.stack.standalone.cluster import StandaloneCluster
from pytest_streamchaos.stack.standalone.daemons import SparkMaster, SparkWorker
from pytest_streamchaos.stack.standalone.executors import ProcessExecutor
from pytest_streamchaos.stack.toxiproxy import ToxiProxy
from pytest_streamchaos.stack.yarn.launcher import YarnJob, YarnSubmitLauncher
from pytest_streamchaos.stack.yarn.nodes import NodeManager, YarnDaemon
from pytest_streamchaos.stack.yarn.spark import ApiNode, ContainerExecutor, MiniYarnSparkCluster, YarnSparkCluster


def placements_fit(local: LocalPlacement, docker: DockerPlacement) -> None:
    placements: list[Placement] = [local, docker]
    del placements


def local_backend_fits(worker: SparkWorker, master: SparkMaster, broker: KafkaNode, hdfs_node: HdfsNode,
                       executor: ProcessExecutor, launcher: SubmitLauncher, job: SparkJob, watcher: CheckpointWatcher,
                       collector: Collector, hdfs: LocalHdfsCluster, scope: HostScope, proxy: ToxiProxy,
                       partition: PartitionState) -> None:
    nodes: list[Node] = [worker, master, broker, hdfs_node]
    spark_executor: Executor = executor
    starts: Launcher = launcher
    driver: JobHandle = job
    checkpoint: CheckpointView = watcher
    output: OutputSeen = collector
    storage: HdfsCluster[HdfsNode] = hdfs
    links: LinkScope = scope
    link: LinkProxy = proxy
    state: PartitionView = partition
    del nodes, spark_executor, starts, driver, checkpoint, output, storage, links, link, state


def yarn_backend_fits(nodemanager: NodeManager, resourcemanager: YarnDaemon, remote: ApiNode,
                      executor: ContainerExecutor, launcher: YarnSubmitLauncher, job: YarnJob) -> None:
    nodes: list[Node] = [nodemanager, resourcemanager, remote]
    spark_executor: Executor = executor
    starts: Launcher = launcher
    driver: JobHandle = job
    del nodes, spark_executor, starts, driver


def connect_backend_fits(job: ConnectJob, launcher: ConnectLauncher, cluster: ConnectSparkCluster) -> None:
    session: ConnectSession = job
    handle: JobHandle = job
    starts: Launcher = launcher
    spark: SparkCluster = cluster
    del session, handle, starts, spark


def capabilities_fit(standalone: StandaloneCluster, connect: ConnectSparkCluster, mini: MiniYarnSparkCluster,
                     yarn: YarnSparkCluster, connect_mini: ConnectMiniYarnSparkCluster,
                     connect_yarn: ConnectYarnSparkCluster, kraft: KRaftCluster, attached: AttachedKafka) -> None:
    workers: list[caps.WorkerKill] = [standalone, connect, mini, connect_mini]
    frozen_workers: list[caps.WorkerPause] = [standalone, connect]
    masters: list[caps.MasterKill] = [standalone, connect, mini, connect_mini]
    frozen_masters: list[caps.MasterPause] = [standalone, connect]
    leading: list[caps.ActiveMaster] = [standalone, connect, mini, connect_mini]
    executors: list[caps.ExecutorKill] = [standalone, connect, mini, yarn, connect_mini, connect_yarn]
    frozen_executors: list[caps.ExecutorPause] = [standalone, connect]
    drivers: list[caps.SubmittedDrivers] = [standalone, mini, yarn]
    servers: list[caps.ConnectServer] = [connect, connect_mini, connect_yarn]
    rm: list[caps.ResourceManagerRestart] = [mini, connect_mini]
    brokers: list[caps.BrokerKill] = [kraft]
    frozen_brokers: list[caps.BrokerPause] = [kraft]
    leaders: list[caps.PartitionLeaders] = [kraft]
    cut: list[caps.BrokerIsolation] = [kraft]
    links: list[caps.KafkaLinks] = [kraft]
    admin: list[caps.TopicAdmin] = [kraft, attached]
    del workers, frozen_workers, masters, frozen_masters, leading, executors, frozen_executors, drivers, servers
    del rm, brokers, frozen_brokers, leaders, cut, links, admin
