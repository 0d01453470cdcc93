"""Which records are poison: the ``poison`` argument of the generator as a predicate over ids.

The choice depends on the id and the seed only, never on how records were batched, so a run's
poison records are reproducible from its seed.
"""

from __future__ import annotations

from collections.abc import Callable, Collection

import numpy as np

#: ``poison`` may be a fraction, a collection of ids, or a vectorised predicate over ids.
PoisonSpec = float | Collection[int] | Callable[[np.ndarray], np.ndarray]


def poison_predicate(poison: PoisonSpec, seed: int) -> Callable[[np.ndarray], np.ndarray] | None:
    """Normalise the ``poison`` argument to ``ids -> bool mask`` (None = no poison)."""
    if callable(poison):
        return lambda ids: np.asarray(poison(ids), dtype=np.bool_)
    if isinstance(poison, (int, float)) and not isinstance(poison, bool):
        if poison == 0:
            return None
        if not 0 < poison <= 1:
            raise ValueError(f"poison as a number is a fraction in (0, 1], got {poison!r}; "
                             "pass a list of ids to poison specific records")
        frac = float(poison)
        # Hashed per id (not drawn from the batch rng), so the choice is reproducible from the seed
        # whatever the batch boundaries were.
        return lambda ids: unit_hash(ids, seed) < frac
    try:
        chosen = np.fromiter(poison, dtype=np.int64)  # type: ignore[arg-type]  # a bool: the TypeError below
    except TypeError as e:
        raise ValueError(f"poison must be a fraction, a collection of ids or a callable, got {poison!r}") from e
    return lambda ids: np.isin(ids, chosen)


def unit_hash(ids: np.ndarray, seed: int) -> np.ndarray:
    """A uniform value in [0, 1) per id (splitmix64 finaliser), reproducible for a seed."""
    with np.errstate(over="ignore"):
        z = ids.astype(np.uint64) + np.uint64((seed * 0x9E3779B97F4A7C15 + 1) % 2**64)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
    return (z >> np.uint64(11)).astype(np.float64) / float(2**53)
