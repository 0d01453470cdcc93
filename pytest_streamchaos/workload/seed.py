"""The workload seed of a test: the same test id gives the same records in every process.

Python's ``hash(str)`` is salted per process (PYTHONHASHSEED), so a seed derived from it changes
from one pytest run to the next and a failing chaos run cannot be replayed. BLAKE2b of the test id
is stable across processes, machines and Python versions.
"""

from __future__ import annotations

import hashlib

#: Seeds are 32-bit unsigned ints: what ``numpy.random.default_rng`` and the generator's per-id
#: hash take, and short enough to type into ``--chaos-seed``.
SEED_BITS = 32


def workload_seed(test_id: str) -> int:
    """A stable 32-bit seed for ``test_id`` (a pytest node id). The variants of a parametrized test share
    it (``test_x[kill_driver]`` and ``test_x[kill_executor]`` get the records of ``test_x``): the same
    input under each variant, so they compare with each other and share one reference run."""
    base = test_id.split("[", 1)[0] if test_id.endswith("]") else test_id
    digest = hashlib.blake2b(base.encode("utf-8"), digest_size=SEED_BITS // 8).digest()
    return int.from_bytes(digest, "big")


def resolve_seed(test_id: str, override: int | None) -> int:
    """``override`` (``--chaos-seed`` / ini ``streamchaos_seed``) if given, else the test's own seed."""
    return workload_seed(test_id) if override is None else int(override)
