"""What the harness knows about a run, as typed attributes of :class:`~pytest_streamchaos.analysis.result.ChaosRun`.

A test asserts on them as on the verdict (``assert run.driver_launches == 2``, ``run.checkpoint``,
``run.load.ended``, ``run.spark_conf["spark.jars"]``); an editor offers them and mypy checks them. Each
reads the run's typed facts (:class:`~pytest_streamchaos.facts.RunFacts`, ``run.facts``); the report's
``meta`` (docs/report-schema.md) is their JSON, written from the same facts, and is never read back.

A run built from a bare trace (a synthetic one, a trace of your own) knows none of this: each attribute
then has its empty value (0 launches, no checkpoint, an empty conf, no load).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..facts import (
    DelayClassChoice,
    GeneratorStats,
    JobFacts,
    LoadFacts,
    RunFacts,
    RunSetup,
    SinkQuery,
    StateStoreFacts,
    Topics,
)
from ..history import History

__all__ = ["HarnessFacts"]

_NO_JOB = JobFacts()
_NO_SETUP = RunSetup()


class HarnessFacts:
    """The run's setup, its job as it ran, its load and its workload, one attribute each (see the module
    docstring); JSON names in the report's ``meta`` are given where they differ."""

    if TYPE_CHECKING:  # what the facts are read from: a run's own history (a field), a repeated run's worst's

        @property
        def history(self) -> History: ...

    @property
    def facts(self) -> RunFacts:
        """What the harness knows about the run besides its records (empty for a bare trace)."""
        return self.history.facts

    @property
    def _job(self) -> JobFacts:
        return self.facts.job or _NO_JOB

    @property
    def _setup(self) -> RunSetup:
        return self.facts.setup or _NO_SETUP

    # -- the setup -----------------------------------------------------------------------------
    @property
    def seed(self) -> int | None:
        """The workload's seed (keys, lateness, poison choice; ``--chaos-seed``); None for a bare trace."""
        return self._setup.seed

    @property
    def arguments(self) -> Mapping[str, Any]:
        """The arguments of ``chaos.run`` as plain values, after its checks and with each group's defaults
        (``rate``, ``duration``, ``supervise``, ...; JSON ``meta.run``)."""
        return self._setup.arguments

    @property
    def spark_conf(self) -> Mapping[str, str]:
        """The Spark conf actually passed to the job (``spark.jars``, ``spark.master``, the test's
        ``conf``, what a delay class set, ...)."""
        return self._setup.spark_conf

    @property
    def timeouts(self) -> list[DelayClassChoice]:
        """The failure-detection timeouts the run changed so that each ``network_delay``'s stated class
        holds (each: the setting, its value before and for this run; JSON ``meta.delay_class``); empty when
        the job's own values already made it hold."""
        return list(self._setup.timeouts)

    @property
    def topics(self) -> Topics | None:
        """The run's topics (``input``, ``output``, ``side``, ...); None for a bare trace."""
        return self.history.topics

    # -- the job as it ran ---------------------------------------------------------------------
    @property
    def driver_launches(self) -> int:
        """How often the job's driver was launched (each a ``driver_launched`` event): 1 when it ran through,
        one more each time it was started again (after ``@kill_driver``, by the supervisor); 0 for a bare
        trace."""
        return self._job.launches

    @property
    def driver_restarts_by_supervisor(self) -> int:
        """How often the run's supervisor (``JobSetup(supervise=True)``) started the driver again after it
        exited of its own."""
        return self._job.restarts_by_supervisor

    @property
    def checkpoint(self) -> str | None:
        """The query's checkpoint directory as the run found it (a local path, or ``hdfs://...``); None when
        none was found."""
        return self._job.checkpoint

    @property
    def checkpoint_storage(self) -> str:
        """Where the checkpoint was kept: ``local``, ``hdfs``, ..."""
        return self._job.checkpoint_storage

    @property
    def state_store(self) -> StateStoreFacts | None:
        """The query's state store as its checkpoint showed it (``provider``, ``files``, ``format_v2``);
        None when the query keeps no state or no checkpoint was found."""
        return self._job.state_store

    @property
    def job_log(self) -> str:
        """The path of the driver's log (stdout and stderr of every launch); ``""`` for a bare trace."""
        return self._job.log

    @property
    def job_workdir(self) -> str:
        """The job's working directory (its relative paths, Spark's event log under ``eventlog``)."""
        return self._job.workdir

    @property
    def sinks(self) -> list[SinkQuery]:
        """Each streaming query of the job and where it wrote (``kind``, ``path``), from Spark's progress."""
        return list(self.facts.sinks)

    # -- the load ------------------------------------------------------------------------------
    @property
    def load(self) -> LoadFacts | None:
        """How long the load was planned (``planned_s``, ``why``) and ran (``ran_s``), and ``ended``: why it
        did not last its plan (ended early on recovery, extended for a late aimed fault); None for a bare
        trace."""
        return self.facts.load

    @property
    def generators(self) -> dict[str, GeneratorStats]:
        """Per input topic, what its load generator counted (``produced``, ``acked``, ``failed``, ...)."""
        return dict(self.facts.generators)

    @property
    def generator(self) -> GeneratorStats | None:
        """What the generator of the run's (first) input counted; :attr:`generators` has each input's."""
        return next(iter(self.facts.generators.values()), None)

    @property
    def poisoned_ids(self) -> list[int]:
        """The ids of the malformed records the generator sent (``@poison_records``); empty without that fault."""
        return list(self.facts.poisoned_ids)
