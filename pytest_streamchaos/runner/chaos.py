"""The ``chaos`` fixture's runner: :class:`Chaos` and its ``run``."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_streamchaos.analysis.metrics import MetricParams
from pytest_streamchaos.analysis.oracle import Oracle
from pytest_streamchaos.analysis.result import ChaosRun
from pytest_streamchaos.faults.spec import FaultSpec
from pytest_streamchaos.observe.outputs import IdSpec
from pytest_streamchaos.runner.groups import JobSetup, Load, Watch, default, grouped
from pytest_streamchaos.runner.run import Run
from pytest_streamchaos.runner.spec import JobPlace, Timing, build_run, check_checkpoint
from pytest_streamchaos.stack.base import KafkaCluster, SparkCluster
from pytest_streamchaos.workload.seed import resolve_seed


class Chaos:
    """The ``chaos`` fixture: runs the user's job on the stack under load with the test's faults.

    ``faults`` come from the test's fault marks (validated at collection). Every finished run is kept
    in :attr:`runs` for the SLA marks, the terminal summary and ``--chaos-report``.
    """

    def __init__(self, *, cluster: SparkCluster, kafka: KafkaCluster, workdir: Path, faults: Sequence[FaultSpec] = (),
                 test_dir: Path | None = None, rootdir: Path | None = None, nodeid: str = "",
                 java_home: str | None = None, jit: str = "quick", seed: int | None = None,
                 status: Callable[[dict[str, Any]], None] | None = None,
                 progress: Callable[[str], None] | None = None, checkpoint: str = "local",
                 hdfs: Callable[[], Any] | None = None) -> None:
        check_checkpoint(checkpoint)
        self.cluster = cluster
        self.kafka = kafka  # the per-test view (unique topic names)
        self.workdir = Path(workdir)
        self.faults = list(faults)
        self.test_dir = test_dir
        self.rootdir = rootdir
        self.nodeid = nodeid
        self.java_home = java_home or None
        self.jit = jit  # the job JVMs' JIT mode (spark.launcher.QUICK_JIT)
        self.seed = resolve_seed(nodeid, seed)  # the workload seed: stable per test id unless given
        self.runs: list[ChaosRun] = []
        #: runs started, failed ones included: each gets a directory of its own (a run that failed must not
        #: hand its checkpoint to the next)
        self.started = 0
        #: called about once a second while a run goes on, with the fields of
        #: :class:`~pytest_streamchaos.runner.context.Status` (the plugin's live progress line); None: nobody listens
        self.status = status
        #: where a line goes while something slow happens once (Spark's Kafka connector resolved)
        self.progress = progress
        #: where runs keep their checkpoints unless a run says otherwise (``--chaos-checkpoint``)
        self.checkpoint = checkpoint
        #: the session's HDFS, started on first use (None: no HDFS on this backend)
        self.hdfs = hdfs

    def run(self, job: str | Path, rate: float = default(200.0), duration: float | None = None,
            guarantee: str = "at-least-once", oracle: Oracle | None = None, *,
            partitions: int = default(2), key_space: int = default(100), skew: float = default(0.0),
            record_size: int = default(100), late_fraction: float = default(0.0), trigger_seconds: float = 1.0,
            warmup_timeout: float = 120.0, drain_timeout: float = 60.0, settle_seconds: float | None = None,
            conf: dict[str, Any] | None = None, env: dict[str, Any] | None = None,
            id_reader: str | Callable[[bytes, bytes | None], list[int]] | None = None,
            params: MetricParams | None = None, args: Sequence[Any] | None = None,
            inputs: Mapping[str, Callable[[Any], Any] | None] | None = None,
            outputs: Mapping[str, IdSpec] | None = None, kafka_port: int | None = None,
            annotate: Mapping[str, Callable[[Any], float]] | None = None, checkpoint: str | None = None,
            supervise: bool = False, stale_checkpoint: str = "fail",
            files: Sequence[str | Path] | None = None, py_files: Sequence[str | Path] | None = None,
            load: Load | None = None, watch: Watch | None = None, setup: JobSetup | None = None) -> ChaosRun:
        """Run ``job`` (a PySpark script: absolute, or relative to the test file or rootdir) at
        ``rate`` records/s for ``duration`` seconds of load after steady state, with the test's
        faults, and return the verdict. Without ``duration`` the load lasts the fault timeline plus a
        recovery window and ends sooner once every fault's recovery is settled
        (docs/metrics.md#ending-the-load-on-recovery). The load's other arguments: :class:`Load`.

        ``guarantee`` is the declared processing guarantee (checked after the test, and by
        ``run.assert_sla``); ``oracle`` says which input ids each output must carry (default:
        identity, for stateless jobs); it and ``outputs``, ``id_reader``, ``annotate``: :class:`Watch`.
        ``params`` sets the metric parameters (band, hold, bucket).

        Wiring for a job written without this plugin in mind (see the README, "Chaos-test your own job"):
        ``args``, ``conf``, ``env``, ``files``, ``py_files``: :class:`JobSetup`. ``inputs`` maps each topic
        the job reads to its record factory (None: the built-in records); several topics get the same ids
        (a join); named topics start empty. ``kafka_port``: the Kafka cluster also answers the job on
        ``127.0.0.1:<port>`` during the run, for a job that hard-codes ``localhost:9092``. ``checkpoint``:
        ``"local"`` (a directory of the run) or ``"hdfs"`` (the stack's HDFS, started on first use, is the
        job's default filesystem); default ``--chaos-checkpoint``. ``supervise``: a driver that exits on
        its own is started again from its checkpoint, as ``spark-submit --supervise`` would.
        ``stale_checkpoint``: docs/job-contract.md#the-jobs-own-files.

        ``load=``, ``watch=``, ``setup=`` carry the same values as the flat arguments of their group;
        a group together with one of its own flat arguments is a ValueError naming both.
        """
        load = grouped("load", Load, load, dict(rate=rate, duration=duration, partitions=partitions, skew=skew,
                                                key_space=key_space, record_size=record_size,
                                                late_fraction=late_fraction))
        watch = grouped("watch", Watch, watch, dict(outputs=outputs, oracle=oracle, id_reader=id_reader,
                                                    annotate=annotate))
        setup = grouped("setup", JobSetup, setup, dict(args=args, conf=conf, env=env, files=files,
                                                       py_files=py_files))
        spec, run_inputs = build_run(
            job, place=JobPlace(test_dir=self.test_dir, rootdir=self.rootdir), faults=self.faults, load=load,
            watch=watch, setup=setup, guarantee=guarantee, params=params, inputs=inputs,
            timing=Timing(trigger_seconds=trigger_seconds, warmup_timeout=warmup_timeout,
                          drain_timeout=drain_timeout, settle_seconds=settle_seconds),
            checkpoint=checkpoint or self.checkpoint, kafka_port=kafka_port, supervise=supervise,
            stale_checkpoint=stale_checkpoint)
        result = Run(self, spec, run_inputs).execute()
        self.runs.append(result)
        return result
