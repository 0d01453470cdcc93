"""Replay tokens: a schedule and what a replay needs besides it, in one copyable word, tied to the test
and the plugin version that made it.

``encode(schedule, nodeid, version, setting)`` -> ``sc2.<base64url of zlib(JSON)>.<crc32>``. The JSON
holds the plugin version, the test's node id, the steps as ``[kind, target, phase, batch anchor]``
(moments by micro-batch phase and batch number, never wall-clock seconds, so a replay lands where the
search landed however fast the machine is) and the :class:`Setting` the schedule ran under: the
workload seed (which records), the job's trigger (what a batch holds), the checkpoint's place (where
the moments are landed: the gate on a local checkpoint, a poll on HDFS). :func:`decode` refuses, in one
line naming both sides, a token of another test or another plugin version (the phases or the kinds may
mean something else there), and a token that is not one (cut short in a copy); :meth:`Setting.differs`
names what a replay's own setting changed.
"""

from __future__ import annotations

import base64
import binascii
import json
import zlib
from dataclasses import dataclass

from pytest_streamchaos.search.schedule import Schedule, Step

PREFIX = "sc2"


class ReplayTokenError(ValueError):
    """A ``--chaos-replay`` token this test cannot replay; the message says why and what to do."""


@dataclass(frozen=True)
class Setting:
    """What a schedule ran under besides its steps: the workload ``seed``, the job's ``trigger`` as the
    run observed it (``"5 s"``, ``"as fast as possible"``; None: not known) and the ``checkpoint``'s
    place (``local`` or ``hdfs``)."""

    seed: int | None = None
    trigger: str | None = None
    checkpoint: str | None = None

    def differs(self, other: Setting, *, fields: tuple[str, ...] = ("seed", "trigger", "checkpoint")) -> str | None:
        """One line naming the first of ``fields`` where ``other`` (a replay's) differs from this (the
        token's) and the fix; None when they agree (an unknown side agrees with anything)."""
        for name in fields:
            mine, theirs = getattr(self, name), getattr(other, name)
            if mine is None or theirs is None or mine == theirs:
                continue
            fix = {"seed": f"run with --chaos-seed={mine}",
                   "trigger": "give the job back the trigger it had, or explore again",
                   "checkpoint": f"run with --chaos-checkpoint={mine}"}[name]
            return (f"--chaos-replay: this token's schedule ran with {name} {mine}, this run's {name} is {theirs}: "
                    f"the batches it counts are not the same here; {fix}")
        return None


def encode(schedule: Schedule, nodeid: str, version: str, setting: Setting = Setting()) -> str:
    """The replay token of ``schedule`` for test ``nodeid`` under plugin ``version``, run under ``setting``."""
    payload = {"v": version, "n": nodeid, "s": [[s.kind, s.target, s.phase, s.batch] for s in schedule.steps],
               "seed": setting.seed, "trigger": setting.trigger, "checkpoint": setting.checkpoint}
    raw = json.dumps(payload, separators=(",", ":"), sort_keys=True).encode()
    body = base64.urlsafe_b64encode(zlib.compress(raw, 9)).rstrip(b"=").decode()
    return f"{PREFIX}.{body}.{zlib.crc32(raw):08x}"


def _payload(token: str) -> dict[str, object]:
    bad = ReplayTokenError(f"--chaos-replay={token[:40]}{'...' if len(token) > 40 else ''}: not a replay token "
                           f"(expected {PREFIX}.<data>.<checksum>); copy the whole `replay:` line of the failing test")
    parts = token.strip().split(".")
    if len(parts) == 3 and parts[0] == "sc1":
        raise ReplayTokenError("--chaos-replay: this token was made by pytest-streamchaos 0.1 (sc1: without the seed, "
                               "trigger and checkpoint a replay needs); explore again to get a token of this version")
    if len(parts) != 3 or parts[0] != PREFIX:
        raise bad
    try:
        raw = zlib.decompress(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
        payload = json.loads(raw)
    except (binascii.Error, zlib.error, ValueError):
        raise bad from None
    if f"{zlib.crc32(raw):08x}" != parts[2] or not isinstance(payload, dict):
        raise bad
    return payload


@dataclass(frozen=True)
class Replay:
    """A decoded token: the ``schedule`` and the ``setting`` it ran under."""

    schedule: Schedule
    setting: Setting


def decode(token: str, nodeid: str, version: str) -> Replay:
    """What ``token`` encodes, for test ``nodeid`` under plugin ``version``; :class:`ReplayTokenError`
    naming both when the token was made by another test or version."""
    payload = _payload(token)
    made_for, made_by = str(payload.get("n")), str(payload.get("v"))
    if made_for != nodeid:
        raise ReplayTokenError(f"--chaos-replay: this token replays test {made_for}, not {nodeid}; run "
                               f"`pytest {made_for} --chaos-replay=...` with it")
    if made_by != version:
        raise ReplayTokenError(f"--chaos-replay: this token was made by pytest-streamchaos {made_by}, this is "
                               f"{version}; its phases may not mean the same here: explore again to get a token "
                               f"of {version}")
    try:
        steps = payload["s"]
        if not isinstance(steps, list):
            raise TypeError("steps")
        schedule = Schedule(tuple(Step(str(k), str(t), str(p), int(b)) for k, t, p, b in steps))
        seed = payload.get("seed")
        setting = Setting(None if seed is None else int(str(seed)), _str(payload.get("trigger")),
                          _str(payload.get("checkpoint")))
    except (KeyError, TypeError, ValueError) as exc:
        raise ReplayTokenError(f"--chaos-replay: the token's schedule does not read here ({exc}); explore again "
                               f"to get a token of {version}") from None
    return Replay(schedule, setting)


def _str(value: object) -> str | None:
    return None if value is None else str(value)


def plugin_version() -> str:
    """The installed pytest-streamchaos version (what a token records)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("pytest-streamchaos")
    except PackageNotFoundError:  # a source tree that was never installed
        return "0+unknown"
