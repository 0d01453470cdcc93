"""The generator's record production: ids to keys, event times, poison and message bytes, a batch at a time.

Keys are drawn uniform or Zipf-skewed, some event times are made late, poison is chosen -- each per id,
from a hash of the id and the seed (:func:`~pytest_streamchaos.workload.poison.unit_hash`), never from
how the records were batched, so a record is a pure function of (seed, id, event time): two runs with the
same seed send the same records, which is what a reference run compares against (the values come from
the built-in JSON template or the test's record factory, whose ``annotate`` callables add ground-truth
columns).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from pytest_streamchaos.workload import records
from pytest_streamchaos.workload.poison import PoisonSpec, poison_predicate, unit_hash

#: ``annotate`` callables: ``(record) -> number`` (the record as the factory made it, see
#: :mod:`pytest_streamchaos.usercode`), recorded per record in the ground truth.
Annotation = Callable[[Any], float]


@dataclass
class Batch:
    """Records ready to send: per record its key number, event time, poison flag and message."""

    keys: np.ndarray  #: key numbers (int64)
    ts_ms: np.ndarray  #: event times, epoch ms (int64)
    poison: np.ndarray | None  #: poison mask (None: no poison configured)
    values: list[bytes]
    msg_keys: list[bytes | None]
    annotations: dict[str, np.ndarray]  #: ground-truth columns computed from the factory's output


class RecordMaker:
    """Makes the records of given ids; the arguments are :class:`~pytest_streamchaos.workload.generator.Generator`'s
    (``late_by`` as a ``(lo, hi)`` range). Seeded: the same seed gives the same records, however batched."""

    def __init__(self, *, key_space: int, skew: float, record_size: int, late_fraction: float,
                 late_by: tuple[float, float], poison: PoisonSpec, seed: int,
                 factory: records.RecordFactory | None, annotate: Mapping[str, Annotation], what: str) -> None:
        self.key_space = key_space
        self.record_size = record_size
        self.late_fraction = late_fraction
        self.late_by = late_by
        self.seed = seed
        self.what = what
        self._factory = factory
        self._annotate = dict(annotate)
        self._poison_fn = poison_predicate(poison, seed)
        # one stream of per-id draws per purpose, each of its own seed (a key does not tell the lateness)
        self._seeds = {what: int(np.random.SeedSequence([seed, n]).generate_state(1)[0])
                       for n, what in enumerate(("key", "late", "late_by"))}
        self._key_cdf = zipf_cdf(key_space, skew) if skew > 0 else None
        self._key_bytes = [records.key_bytes(k) for k in range(key_space)] if key_space <= 200_000 else None

    def make(self, ids: np.ndarray, event: np.ndarray) -> Batch:
        """The records of ``ids`` scheduled at ``event`` (wall-clock seconds; late ones are moved back)."""
        draw = self._seeds
        if self.late_fraction > 0:
            late = unit_hash(ids, draw["late"]) < self.late_fraction
            lo, hi = self.late_by
            event[late] -= lo + (hi - lo) * unit_hash(ids[late], draw["late_by"])
        ts_ms = np.floor(event * 1000.0).astype(np.int64)
        u = unit_hash(ids, draw["key"])
        if self._key_cdf is None:
            keys = np.minimum((u * self.key_space).astype(np.int64), self.key_space - 1)
        else:
            keys = np.searchsorted(self._key_cdf, u, side="right").astype(np.int64)
        poison = self._poison_fn(ids) if self._poison_fn is not None else None
        if self._factory is None:
            values = records.encode_batch(ids, keys, ts_ms, self.record_size, poison)
            kb = self._key_bytes
            msg_keys: list[bytes | None] = ([kb[k] for k in keys.tolist()] if kb is not None
                                            else [records.key_bytes(k) for k in keys.tolist()])
            return Batch(keys, ts_ms, poison, values, msg_keys, {})
        values, msg_keys, ann = records.build_batch(self._factory, self.seed, ids, keys, ts_ms, poison,
                                                    self._annotate, self.what)
        return Batch(keys, ts_ms, poison, values, msg_keys, ann)


def zipf_cdf(n: int, s: float) -> np.ndarray:
    """CDF of a finite Zipf distribution over ranks 1..n (rank 1 = key 0)."""
    w = 1.0 / np.arange(1, n + 1, dtype=np.float64) ** s
    cdf = np.cumsum(w)
    cdf /= cdf[-1]
    cdf[-1] = 1.0  # searchsorted never returns n
    return cdf
