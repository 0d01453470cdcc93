"""The ``chaos`` fixture's object: it holds the runner (:class:`~pytest_streamchaos.runner.Chaos`) and adds
repeats, runs without the test's faults, and A/B comparisons in one test.

Kept apart from the runner on purpose: the runner owns one run's life cycle, this wraps whole runs. The call a
test makes, ``chaos.run(...)``, is written here and only here: its flat arguments are folded into their groups
and handed to the runner as one ``RunGroups``.

- ``chaos.run(job, ...)`` runs the scenario once and returns a ``ChaosRun`` -- or, under
  ``@pytest.mark.chaos(repeat=N)`` / ``--chaos-repeat=N`` / ``chaos.run(..., repeat=N)``, N times
  with the same seed (the same records: what varies is the system, not the workload) and returns a
  :class:`~pytest_streamchaos.analysis.repeat.RepeatedRun` (medians, spread, worst).
- ``chaos.run(job, ..., faults=False)``: the same scenario without the test's fault marks.
- ``chaos.compare(job, a={...}, b={...}, **common)``: runs A then B (each ``common`` updated with its
  own arguments; a group given in both is merged, its ``conf`` and ``env`` dicts key by key) and returns
  B ``.versus(A)``: per-metric deltas and a masking verdict per fault of B.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar, overload

from pytest_streamchaos.analysis.oracle import Oracle
from pytest_streamchaos.analysis.reference import Reference
from pytest_streamchaos.analysis.repeat import RepeatedRun
from pytest_streamchaos.analysis.result import ChaosRun
from pytest_streamchaos.analysis.versus import Versus, versus
from pytest_streamchaos.observe.outputs import IdSpec
from pytest_streamchaos.runner import Chaos
from pytest_streamchaos.runner.groups import (
    GROUPS,
    JobSetup,
    Load,
    Timing,
    Watch,
    check_keywords,
    default,
    grouped,
    grouped_keywords,
)
from pytest_streamchaos.runner.spec import RunGroups
from pytest_streamchaos.stack.base import KafkaCluster, SparkCluster

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

#: the fields of a group that two runs' groups merge key by key
_MERGED = ("conf", "env")


def merged_args(common: Mapping[str, Any], own: Mapping[str, Any] | None) -> dict[str, Any]:
    """``common`` updated by ``own``; a group in both (``setup=JobSetup(...)``) is merged: ``own``'s fields
    that differ from the group's defaults win, and its ``conf`` / ``env`` dicts are merged key by key,
    so that ``a={"setup": JobSetup(conf={"spark.sql.shuffle.partitions": 4})}`` keeps the common Spark conf."""
    out = {**common, **(own or {})}
    for key in GROUPS:
        mine, theirs = (own or {}).get(key), common.get(key)
        if mine is not None and theirs is not None and type(mine) is type(theirs):
            out[key] = _merged_group(theirs, mine)
    return out


#: a group of a run's arguments (``JobSetup``...): a dataclass
_Group = TypeVar("_Group", bound="DataclassInstance")


def _merged_group(common: _Group, own: _Group) -> _Group:
    changes: dict[str, object] = {}
    for f in fields(own):
        value = getattr(own, f.name)
        if f.name in _MERGED and isinstance(value, Mapping):
            changes[f.name] = {**(getattr(common, f.name) or {}), **value}
        elif value != f.default:
            changes[f.name] = value
    return replace(common, **changes)


class ChaosFixture:
    """What the ``chaos`` fixture hands a test (see the module docstring). Annotated with it,
    ``def test_x(chaos: ChaosFixture):`` (``from pytest_streamchaos import ChaosFixture``), a test has every
    ``chaos.run(...)`` keyword checked by an editor or mypy, and its result known as a ``ChaosRun``.

    :attr:`runner` is the :class:`~pytest_streamchaos.runner.Chaos` that runs each run (given, or made of
    ``kwargs``). :attr:`results` holds what each ``run`` returned (a ``ChaosRun`` or a ``RepeatedRun``): the
    plugin judges it by the test's plan, saves baselines and draws pictures from it. :attr:`runs` holds every
    single run.
    """

    def __init__(self, runner: Chaos | None = None, *, repeat: int = 1, **kwargs: Any) -> None:
        if repeat < 1:
            raise ValueError(f"repeat={repeat!r} must be >= 1")
        self.runner = runner if runner is not None else Chaos(**kwargs)
        self.repeat = repeat
        self.results: list[ChaosRun | RepeatedRun] = []
        self.comparisons: list[Versus] = []

    # -- what a test reads of the runner -------------------------------------------------------------
    @property
    def cluster(self) -> SparkCluster:
        """The Spark cluster the test's runs run on."""
        return self.runner.cluster

    @property
    def kafka(self) -> KafkaCluster:
        """The test's view of the Kafka cluster (its topics' names are unique to it)."""
        return self.runner.kafka

    @property
    def runs(self) -> list[ChaosRun]:
        """Every single run of the test, in order (a repeated run's each)."""
        return self.runner.runs

    @property
    def seed(self) -> int:
        """The workload's seed: stable per test id unless ``--chaos-seed`` gives one (the same records each run)."""
        return self.runner.seed

    @property
    def started(self) -> int:
        """How many runs started, failed ones and reference runs included."""
        return self.runner.started

    def close_history(self) -> ChaosRun | None:
        """End ``@explore``'s one history running now, if any (:meth:`Chaos.close_history`)."""
        return self.runner.close_history()

    # The return type follows ``repeat``: one ChaosRun when not given (a repeat the test's mark or
    # --chaos-repeat asks for cannot be seen here: that RepeatedRun answers every ChaosRun attribute) or
    # given as 1, a RepeatedRun for any other count. An int that is 1 only at run time gives one ChaosRun
    # typed RepeatedRun: mypy's overlap warning below is that case, accepted for a precise literal call.
    @overload
    def run(self, job: str | Path, rate: float = 200.0, duration: float | None = None,  # type: ignore[overload-overlap]
            guarantee: str = "at-least-once", oracle: Oracle | None = None, *,
            inputs: Mapping[str, Callable[[Any], Any] | None] | None = None,
            outputs: Mapping[str, IdSpec] | Sequence[str] | None = None, kafka_port: int | None = None,
            load: Load | None = None, watch: Watch | None = None, setup: JobSetup | None = None,
            timing: Timing | None = None, reference: bool | Reference | None = None,
            repeat: Literal[1] | None = None, faults: bool = True) -> ChaosRun: ...

    @overload
    def run(self, job: str | Path, rate: float = 200.0, duration: float | None = None,
            guarantee: str = "at-least-once", oracle: Oracle | None = None, *,
            inputs: Mapping[str, Callable[[Any], Any] | None] | None = None,
            outputs: Mapping[str, IdSpec] | Sequence[str] | None = None, kafka_port: int | None = None,
            load: Load | None = None, watch: Watch | None = None, setup: JobSetup | None = None,
            timing: Timing | None = None, reference: bool | Reference | None = None,
            repeat: int, faults: bool = True) -> RepeatedRun: ...

    @grouped_keywords
    def run(self, job: str | Path, rate: float = default(200.0), duration: float | None = None,
            guarantee: str = "at-least-once", oracle: Oracle | None = None, *,
            inputs: Mapping[str, Callable[[Any], Any] | None] | None = None,
            outputs: Mapping[str, IdSpec] | Sequence[str] | None = None, kafka_port: int | None = None,
            load: Load | None = None, watch: Watch | None = None, setup: JobSetup | None = None,
            timing: Timing | None = None, reference: bool | Reference | None = None,
            repeat: int | None = None, faults: bool = True) -> ChaosRun | RepeatedRun:
        """Run ``job`` (a PySpark script: absolute, or relative to the test file or rootdir) at
        ``rate`` records/s for ``duration`` seconds of load after steady state, with the test's
        faults, and return the verdict, a :class:`~pytest_streamchaos.analysis.result.ChaosRun`. Without
        ``duration`` the load lasts the fault timeline plus a recovery window and ends sooner once every
        fault's recovery is settled (docs/metrics.md#ending-the-load-on-recovery).

        ``guarantee`` is the declared processing guarantee (checked after the test, and by
        ``run.assert_sla``); ``oracle`` says which input ids each output must carry (default:
        identity, for stateless jobs).

        For a job written without this plugin in mind (see docs/tutorial.md, "Chaos-test your own job"):
        ``inputs`` maps each topic the job reads to its record factory (None: the built-in records);
        several topics get the same ids (a join); named topics start empty. ``outputs`` maps each place it
        writes to how input ids are read there. ``kafka_port``: the Kafka cluster also answers the job on
        ``127.0.0.1:<port>`` during the run, for a job that hard-codes ``localhost:9092``.

        The rest comes in groups: ``load=Load(...)`` (partitions, keys, skew, record size, late records),
        ``watch=Watch(...)`` (id readers, annotations, metric parameters), ``setup=JobSetup(...)`` (the
        job's args, conf, env, files, checkpoint place, supervision) and ``timing=Timing(...)`` (trigger,
        phase timeouts, settle time). The flat arguments above belong to groups too (``rate`` to
        :class:`Load`, ``outputs`` to :class:`Watch`, ``kafka_port`` to :class:`JobSetup` ...) and are folded
        into them; a field given both flat and in its group is a ValueError naming it, and an argument
        given flat that lives in a group a TypeError naming the group. A job in real-time mode is recognised
        (:mod:`pytest_streamchaos.analysis.judge`).

        ``reference=True`` (or ``Reference(key=[...], ignore=[...])``) also runs the job on the same input
        without faults -- twice, once per session for this job and input -- and compares this run's outputs
        with it by key (``run.diverged``, ``run.reference``): the oracle of a job whose output is not one
        record per input (aggregates, joins, sessions, a table written by MERGE).

        ``repeat=N`` runs the scenario N times with the same seed and returns a
        :class:`~pytest_streamchaos.analysis.repeat.RepeatedRun` (medians, spread, worst run); without it,
        the test's ``@pytest.mark.chaos(repeat=N)``, else ``--chaos-repeat``, decides (a ``RepeatedRun``
        then answers with its medians, and with its worst run's timeline, faults, windows and facts).
        ``faults=False`` leaves the test's fault marks out of this run.
        """
        groups = RunGroups(load=grouped("load", Load, load, dict(rate=rate, duration=duration, inputs=inputs)),
                           watch=grouped("watch", Watch, watch, dict(outputs=outputs, oracle=oracle,
                                                                     reference=reference)),
                           setup=grouped("setup", JobSetup, setup, dict(kafka_port=kafka_port)),
                           timing=timing or Timing())
        return self._repeated(lambda: self.runner.run(job, groups, guarantee), repeat=repeat, faults=faults)

    def _repeated(self, once: Callable[[], ChaosRun], *, repeat: int | None, faults: bool) -> ChaosRun | RepeatedRun:
        """``once()`` ``repeat`` times (None: the test's mark, else ``--chaos-repeat``), without the test's
        fault marks when not ``faults``: one ``ChaosRun``, or a ``RepeatedRun`` of several, kept in
        :attr:`results`. Test seam: a subclass whose ``run`` hands it synthetic runs (tests/unit/synthetic.py)
        exercises repeats, comparisons and the plugin's reports without Spark."""
        n = self.repeat if repeat is None else int(repeat)
        if n < 1:
            raise ValueError(f"repeat={n!r} must be >= 1")
        runner = self.runner
        planned = runner.faults
        if not faults:
            runner.faults = []
        if n > 1 and runner.share_history:  # several runs of one schedule: each a whole run of its own
            runner.unshared = runner.unshared or f"the body repeats its run (repeat={n})"
            runner.share_history = False
        runs: list[ChaosRun] = []
        runner.repeats = n
        try:
            for _ in range(n):
                if runs:  # each repetition starts as the first did: not from the checkpoint the last one left
                    runner._clear_leftovers()
                try:
                    runs.append(once())
                finally:
                    finish = getattr(runner.status, "finish", None)
                    if finish is not None:
                        finish()
        finally:
            runner.faults, runner.repeats = planned, 1
        result: ChaosRun | RepeatedRun = runs[0] if n == 1 else RepeatedRun(runs)
        self.results.append(result)
        return result

    def compare(self, job: str | Path, a: Mapping[str, Any] | None = None, b: Mapping[str, Any] | None = None,
                *, labels: tuple[str, str] = ("A", "B"), slo_latency: float | None = None,
                **common: Any) -> Versus:
        """Run ``job`` under A, then under B, and return B versus A (``Versus``: ``.deltas``,
        ``.faults`` verdicts, ``.describe()``). ``slo_latency`` (s) separates degraded from outage."""
        args_a, args_b = merged_args(common, a), merged_args(common, b)
        for args in (args_a, args_b):  # B's typo found before A's whole run, not after it
            check_keywords(self.run, args)
        run_a = self.run(job, **args_a)
        run_b = self.run(job, **args_b)
        result = versus(run_b, run_a, slo_latency=slo_latency, labels=labels)
        self.comparisons.append(result)
        return result
