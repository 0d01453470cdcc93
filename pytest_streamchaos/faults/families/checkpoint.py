"""The checkpoint family: the query's checkpoint damaged the ways crashes, full disks and hand repairs leave
it, while the driver is stopped between two of its steps, and the driver started again from it.

- ``drop_commit``: the newest ``commits/N`` deleted between batches: on restart Spark finds ``offsets/N``
  without its commit and runs batch N again -- a deterministic replay with nothing killed mid-flight (the
  driver is stopped while the checkpoint gate holds it after ``commits/N``, with no batch in flight). The
  cheapest proof that a sink is, or is not, idempotent: Paimon's and Hudi's maintainers reproduce replay
  duplicates this way.
- ``tear_offsets``: the newest ``offsets/N`` left torn (``how='truncate'``: its first half; ``'empty'``: no
  byte; the checksum file beside it gone, as on a file system without one) or a stray temporary file of the
  next one (``how='tmp'``: what a crash while writing ``offsets/N+1`` leaves): the job must recover or fail
  loudly (SPARK-38033, gaps and torn files in ``offsets/``).
- ``damage_state``: the newest state file of a partition (``state/<operator>/<partition>/<version>.delta``,
  ``.snapshot``, RocksDB's ``.zip`` / ``.changelog``) deleted or truncated: the job must fail loudly or
  recover correctly (the RocksDB state-file mismatches of SPARK-43404 and its kin).

Spark reads a checkpoint only when a query starts, so each of them stops the driver at its moment (landed by
the checkpoint gate: a local checkpoint), damages the files, and starts the driver again from the same
checkpoint on heal (``restart_after``, 0 by default). Each ``fault_injected`` event names the file and what
was done to it, and lists the directory before and after; the run's ``damage`` check says whether the job
recovered (and replayed what), or failed loudly (with Spark's own error).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, TypedDict

from pytest_streamchaos import storages
from pytest_streamchaos.faults.context import CONFIRM_DRIVER_KILL_S
from pytest_streamchaos.faults.kind import FaultKind, JobSite, Preparation, SearchTarget
from pytest_streamchaos.faults.moments import BETWEEN_BATCHES, OFFSETS_LOGGED
from pytest_streamchaos.faults.spec import FaultSpec, FaultSpecError, number
from pytest_streamchaos.faults.timeline import PlannedFault
from pytest_streamchaos.stack.base import CheckpointView

RESTART_ARG = {"restart_after": "seconds after the damage to start the driver again from the checkpoint (default 0)"}
#: how many of a directory's newest names the before / after listings keep
LISTED = 4


def batch_files(names: Sequence[str]) -> list[int]:
    """The batch numbers among a checkpoint log's names (``offsets/N``, ``commits/N``: not ``.N.crc`` or temps)."""
    return sorted(int(n) for n in names if n.isdigit())


def newest(names: Sequence[str], n: int = LISTED) -> list[str]:
    """The ``n`` newest entries of a log directory, its batch files in batch order (then the others)."""
    batches = [str(b) for b in batch_files(names)][-n:]
    return batches + sorted(x for x in names if not x.isdigit() and not x.endswith(".crc"))


class Damaged(TypedDict, total=False):
    """What a checkpoint fault did (its handle, and its ``fault_injected`` detail): how the file was damaged, which
    file, the batch it concerns, the bytes left in it (None: deleted), and the directory before and after."""

    damage: str
    file: str
    batch: int | None
    replays: int
    bytes: int | None
    how: str
    version: int | None
    before: object
    after: object


def state_version(name: str) -> int | None:
    """The version a state store file is of (``12.delta``, ``12.snapshot``, ``12.zip``, ``12_<id>.zip``,
    ``12.changelog``), None for anything else (hidden, checksum, ``_metadata``, ``SSTs``)."""
    head = name.split(".", 1)[0].split("_", 1)[0]
    return int(head) if head.isdigit() and not name.startswith(".") and "." in name else None


def state_files(names: Sequence[str]) -> list[str]:
    """A partition's state files in version order (``9.delta`` before ``10.delta``: not the names' order)."""
    return sorted((n for n in names if state_version(n) is not None), key=lambda n: (state_version(n), n))


def newest_state_file(names: Sequence[str]) -> str | None:
    """The newest state file of a partition's directory: of the highest version, the per-batch file (a delta or
    changelog) before a snapshot or an archive."""
    files = state_files(names)
    if not files:
        return None
    top = [n for n in files if state_version(n) == state_version(files[-1])]
    per_batch = [n for n in top if n.endswith((".delta", ".changelog"))]
    return (per_batch or top)[0]


class _Damage(FaultKind[Damaged]):
    """A checkpoint damage: the driver stopped at the kind's moment (its first ``moments``, the default
    ``when``), the files damaged (:meth:`damage`), the driver started again on heal."""

    args: ClassVar[Mapping[str, str]] = RESTART_ARG
    # the damage is the point, not the stop: the search's rules about a driver's kill do not fold it
    takes_down = "other"
    search_targets: ClassVar[tuple[str | SearchTarget, ...]] = (SearchTarget("checkpoint"),)
    default_restart_after = 0.0  # the restart is what reads the damaged checkpoint

    @classmethod
    def parse(cls, args: Sequence[Any] = (), kwargs: Mapping[str, Any] | None = None) -> FaultSpec:
        given = dict(kwargs or {})
        given.setdefault("when", cls.moments[0])  # its moment: the driver is stopped with nothing in flight
        spec = super().parse(args, given)
        if spec.every is not None:
            raise FaultSpecError(f"@{cls.name}: every= cannot be combined with its moment; give it once")
        return spec

    @classmethod
    def stops_driver(cls, spec: FaultSpec) -> bool:
        return True

    @classmethod
    def refused_by_run(cls, spec: FaultSpec, *, checkpoint: str) -> str | None:
        storage = storages.get(checkpoint)
        if storage.preloaded:
            return None
        return (f"it damages the checkpoint while the checkpoint gate holds the driver at {spec.when}, and that needs "
                f"the checkpoint on this host's file system (checkpoint={checkpoint!r}: on {storage.title} "
                f"{storage.renames}): use setup=JobSetup(checkpoint=\"{storages.PRELOADED}\")")

    @classmethod
    def before_job(cls, specs: Sequence[FaultSpec], site: JobSite) -> Preparation | None:
        if site.separate_hosts:
            raise ValueError(f"@{cls.name}: the job's executors run in containers, where the checkpoint gate that "
                             "lands its moment cannot reach: run it on the local backend")
        if site.elsewhere:
            raise ValueError(f"@{cls.name}: the job keeps its checkpoint at {', '.join(site.elsewhere)}, which this "
                             "run cannot reach (only this host's file system, or the stack's HDFS): point the job's "
                             "checkpointLocation at a local path, e.g. args=[\"{checkpoint_dir}\"]")
        return None

    def target(self, planned: PlannedFault) -> str:
        return "checkpoint"

    def _view(self) -> CheckpointView:
        if self.ctx.checkpoint is None:
            raise RuntimeError(f"{self.name} needs the query's checkpoint, which the run has not found")
        return self.ctx.checkpoint

    def inject(self, planned: PlannedFault) -> Damaged:
        """Stop the driver (held by the gate at the moment: nothing in flight), wait until it is gone, then
        damage the checkpoint; returns what was done, with the directory before and after."""
        cp = self._view()
        self.ctx.job.kill(wait=False)
        self.ctx.job.wait_gone(CONFIRM_DRIVER_KILL_S)
        return self.damage(cp, planned)

    def damage(self, cp: CheckpointView, planned: PlannedFault) -> Damaged:
        raise NotImplementedError

    def confirm(self, planned: PlannedFault, done: Damaged) -> dict[str, object]:
        """The checkpoint's files show the damage (checked by the kind's :meth:`landed_on`)."""
        why = self.landed_on(self._view(), done)
        if why:
            raise RuntimeError(why)
        return dict(done)

    def landed_on(self, cp: CheckpointView, done: Damaged) -> str | None:
        """Why the files do not show the damage, or None."""
        return None

    def heal(self, planned: PlannedFault, done: Damaged) -> None:
        self.ctx.job.restart()


def _listing(cp: CheckpointView, *parts: str) -> list[str]:
    return newest(cp.names(*parts))


class DropCommit(_Damage):
    """``drop_commit``: the newest ``commits/N`` deleted between batches, the driver restarted: batch N replays."""

    name = "drop_commit"
    doc = ("delete the newest commits/N of the query's checkpoint between batches (the driver stopped there) and "
           "restart the driver: batch N runs again (a replay with nothing in flight killed)")
    moments = (BETWEEN_BATCHES,)

    def damage(self, cp: CheckpointView, planned: PlannedFault) -> Damaged:
        before = {"commits": _listing(cp, "commits"), "offsets": _listing(cp, "offsets")}
        committed = batch_files(cp.names("commits"))
        if not committed:
            raise RuntimeError("the query has committed no batch yet: there is no commit to drop")
        n = committed[-1]
        cp.remove("commits", str(n))
        cp.remove("commits", f".{n}.crc")
        return {"damage": "deleted", "file": f"commits/{n}", "batch": n, "replays": n, "before": before,
                "after": {"commits": _listing(cp, "commits"), "offsets": _listing(cp, "offsets")}}

    def landed_on(self, cp: CheckpointView, done: Damaged) -> str | None:
        n = done["batch"]
        if cp.size("commits", str(n)) is not None:
            return f"commits/{n} is still there"
        if cp.size("offsets", str(n)) is None:
            return f"offsets/{n} is gone: batch {n} would not replay"
        return None


#: what ``tear_offsets`` leaves
TEAR_HOW = ("truncate", "empty", "tmp")


class TearOffsets(_Damage):
    """``tear_offsets``: right after ``offsets/N`` was written (no task of batch N yet) the driver stops and the
    file is left torn (``truncate``: its first half; ``empty``), or a stray temporary file of the next batch's
    offsets is left beside it (``tmp``); then the driver starts again from the checkpoint."""

    name = "tear_offsets"
    doc = ("leave the newest offsets/N of the query's checkpoint torn (how='truncate': half of it, 'empty'), or a "
           "stray .tmp of offsets/N+1 (how='tmp'), while the driver is stopped after writing it; then restart it")
    args = {**RESTART_ARG, "how": "'truncate' (default: its first half), 'empty' (no byte) or 'tmp' (a stray "
                                  "temporary file of the next batch's offsets)"}
    moments = (OFFSETS_LOGGED,)

    @classmethod
    def check_params(cls, params: dict[str, Any]) -> None:
        if params.setdefault("how", TEAR_HOW[0]) not in TEAR_HOW:
            raise FaultSpecError(f"@{cls.name}: how={params['how']!r} must be one of {', '.join(map(repr, TEAR_HOW))}")

    def damage(self, cp: CheckpointView, planned: PlannedFault) -> Damaged:
        before = _listing(cp, "offsets")
        planned_batches = batch_files(cp.names("offsets"))
        if not planned_batches:
            raise RuntimeError("the query has planned no batch yet: there is no offsets file to tear")
        n = planned_batches[-1]
        data = cp.read("offsets", str(n)) or b""
        how = planned.spec.params.get("how", TEAR_HOW[0])
        done: Damaged
        if how == "tmp":
            name = f".{n + 1}.{uuid.uuid4()}.tmp"  # the temporary name Spark writes offsets/N+1 under
            cp.write("offsets", name, data=data[: len(data) // 2])
            done = {"damage": "stray temporary file", "file": f"offsets/{name}", "batch": n, "bytes": len(data) // 2}
        else:
            keep = 0 if how == "empty" else len(data) // 2
            cp.write("offsets", str(n), data=data[:keep])
            cp.remove("offsets", f".{n}.crc")  # a torn file with no checksum to betray it (HDFS, object stores)
            done = {"damage": f"truncated to {keep} of {len(data)} bytes", "file": f"offsets/{n}", "batch": n,
                    "bytes": keep}
        return {**done, "how": how, "before": before, "after": _listing(cp, "offsets")}

    def landed_on(self, cp: CheckpointView, done: Damaged) -> str | None:
        parts = done["file"].split("/")
        size = cp.size(*parts)
        return None if size == done["bytes"] else f"{done['file']} has {size} bytes, not {done['bytes']}"


#: what ``damage_state`` does to the file
STATE_HOW = ("delete", "truncate")


class DamageState(_Damage):
    """``damage_state``: between batches, the newest state file of one partition of a stateful operator is
    deleted or truncated (its first half, its checksum gone), then the driver starts again: the state store
    must fail loudly or recover correctly."""

    name = "damage_state"
    doc = ("delete (how='delete', default) or truncate (how='truncate') the newest state file of a partition in "
           "the query's checkpoint between batches (the driver stopped there), then restart the driver")
    args = {**RESTART_ARG, "how": "'delete' (default) or 'truncate' (its first half)",
            "partition": "the state store partition (default 0)", "operator": "the stateful operator (default 0)"}
    moments = (BETWEEN_BATCHES,)

    @classmethod
    def check_params(cls, params: dict[str, Any]) -> None:
        if params.setdefault("how", STATE_HOW[0]) not in STATE_HOW:
            raise FaultSpecError(f"@{cls.name}: how={params['how']!r} must be one of {', '.join(map(repr, STATE_HOW))}")
        for name in ("partition", "operator"):
            params[name] = int(number(cls.name, name, params.get(name, 0), integer=True))

    def damage(self, cp: CheckpointView, planned: PlannedFault) -> Damaged:
        op, part = str(planned.spec.params.get("operator", 0)), str(planned.spec.params.get("partition", 0))
        where = ("state", op, part)
        names = cp.names(*where)
        found = newest_state_file(names)
        if found is None:
            raise RuntimeError(f"the query's checkpoint has no state file in state/{op}/{part} "
                               f"({'no state/ at all: a stateless query' if not cp.names('state') else names}): "
                               f"{self.name} needs a stateful query (operator= and partition= name one)")
        before = state_files(names)
        how = planned.spec.params.get("how", STATE_HOW[0])
        done: Damaged
        if how == "delete":
            cp.remove(*where, found)
            done = {"damage": "deleted", "bytes": None}
        else:
            data = cp.read(*where, found) or b""
            cp.write(*where, found, data=data[: len(data) // 2])
            done = {"damage": f"truncated to {len(data) // 2} of {len(data)} bytes", "bytes": len(data) // 2}
        cp.remove(*where, f".{found}.crc")
        after = state_files(cp.names(*where))
        committed = batch_files(cp.names("commits"))
        return {**done, "how": how, "file": "/".join((*where, found)), "version": state_version(found),
                "batch": committed[-1] if committed else None, "before": before[-LISTED:], "after": after[-LISTED:]}

    def landed_on(self, cp: CheckpointView, done: Damaged) -> str | None:
        size = cp.size(*done["file"].split("/"))
        return None if size == done["bytes"] else f"{done['file']} has {size} bytes, not {done['bytes']}"


KINDS = (DropCommit, TearOffsets, DamageState)
