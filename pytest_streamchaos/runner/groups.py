"""The grouped arguments of ``chaos.run``: ``load=Load(...)``, ``watch=Watch(...)``, ``setup=JobSetup(...)``.

``chaos.run`` keeps its flat keyword arguments (``rate=``, ``outputs=``, ``args=``, ...); a group
carries the same values under one name, for a test that reuses a load or a way of reading the
outputs across runs. A group and one of its own flat arguments together is a :class:`ValueError`
naming both: which one would win is not obvious.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar, cast

from pytest_streamchaos.analysis.oracle import Oracle
from pytest_streamchaos.observe.outputs import IdSpec


@dataclass(frozen=True, kw_only=True)
class Load:
    """What the generator sends: ``rate`` records/s for ``duration`` s of load after steady state
    (None: the fault timeline plus a recovery window), into ``partitions`` per input topic, over
    ``key_space`` keys with Zipf ``skew``, ``record_size`` bytes, ``late_fraction`` of late records."""

    rate: float = 200.0
    duration: float | None = None
    partitions: int = 2
    key_space: int = 100
    skew: float = 0.0
    record_size: int = 100
    late_fraction: float = 0.0


@dataclass(frozen=True, kw_only=True)
class Watch:
    """How the run reads and judges the job's output.

    ``outputs`` maps each place the job writes (a Kafka topic, or ``"file:<path>"`` for a file-sink
    directory, relative to the driver's working directory) to how input ids are read there (``"key"``,
    a JSON field path, or a callable ``(value, key) -> ids``); ``{}`` when nothing is readable (console,
    noop): the run then reports recovery from Spark's query progress only; None: the run's own output
    topic. ``oracle`` says which input ids each output must carry (None: identity). ``id_reader`` reads
    the ids from the run's own output topic. ``annotate``: ``{name: fn(record) -> number}`` on each
    record the factory made, as it is sent (an aggregate's amount, an ``explode``'s copies); a callable
    that raises stops the run (:mod:`pytest_streamchaos.usercode`)."""

    outputs: Mapping[str, IdSpec] | None = None
    oracle: Oracle | None = None
    id_reader: str | Callable[[bytes, bytes | None], list[int]] | None = None
    annotate: Mapping[str, Callable[[Any], float]] | None = None


@dataclass(frozen=True, kw_only=True)
class JobSetup:
    """How the job is started: ``args`` is its argv, with ``{bootstrap_servers}``, ``{input_topic}``,
    ``{output_topic}``, ``{checkpoint_dir}`` and ``{workdir}`` substituted; ``conf`` is Spark conf for
    it, ``env`` extra environment for its driver; ``files`` and ``py_files`` its own data and Python
    files, as spark-submit's (relative: beside the job, the test file, the rootdir)."""

    args: Sequence[Any] | None = None
    conf: Mapping[str, Any] | None = None
    env: Mapping[str, Any] | None = None
    files: Sequence[str | Path] | None = None
    py_files: Sequence[str | Path] | None = None


class Default:
    """A flat argument's default in ``chaos.run``'s signature, so that a value the test gave (even
    the default one) is told from none given; shows as the value itself."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __repr__(self) -> str:
        return repr(self.value)


V = TypeVar("V")


def default(value: V) -> V:
    """``value`` as a flat argument's :class:`Default` (typed as the value, for the signature)."""
    return cast(V, Default(value))


def given(value: Any) -> bool:
    """Whether a flat argument was given: neither None nor its :class:`Default`."""
    return value is not None and not isinstance(value, Default)


G = TypeVar("G", Load, Watch, JobSetup)


def grouped(name: str, cls: type[G], group: G | None, flat: Mapping[str, Any]) -> G:
    """The group ``name=`` of ``chaos.run``: ``group`` as given, or built from the flat arguments
    (``flat``: field name -> value as passed). Both a group and a flat argument of it: ValueError."""
    if group is not None and not isinstance(group, cls):
        raise TypeError(f"{name}= takes a {cls.__name__}(...), not {type(group).__name__}")
    passed = {k: v for k, v in flat.items() if given(v)}
    if group is not None and passed:
        both = ", ".join(f"{k}=" for k in passed)
        raise ValueError(f"chaos.run got both {name}={cls.__name__}(...) and {both}: give "
                         f"{'it' if len(passed) == 1 else 'them'} inside {cls.__name__}(...) or drop {name}=")
    return group if group is not None else cls(**passed)
