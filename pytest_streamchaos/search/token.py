"""Replay tokens: a schedule in one copyable word, tied to the test and the plugin version that made it.

``encode(schedule, nodeid, version)`` -> ``sc1.<base64url of zlib(JSON)>.<crc32>``. The JSON holds the
plugin version, the test's node id and the steps as ``[kind, target, phase, batch anchor]``: moments
by micro-batch phase and batch number, never wall-clock seconds, so a replay lands where the search
landed however fast the machine is. :func:`decode` refuses, in one line naming both sides, a token of
another test or another plugin version (the phases or the kinds may mean something else there), and a
token that is not one (cut short in a copy).
"""

from __future__ import annotations

import base64
import binascii
import json
import zlib

from pytest_streamchaos.search.schedule import Schedule, Step

PREFIX = "sc1"


class ReplayTokenError(ValueError):
    """A ``--chaos-replay`` token this test cannot replay; the message says why and what to do."""


def encode(schedule: Schedule, nodeid: str, version: str) -> str:
    """The replay token of ``schedule`` for test ``nodeid`` under plugin ``version``."""
    payload = {"v": version, "n": nodeid, "s": [[s.kind, s.target, s.phase, s.batch] for s in schedule.steps]}
    raw = json.dumps(payload, separators=(",", ":"), sort_keys=True).encode()
    body = base64.urlsafe_b64encode(zlib.compress(raw, 9)).rstrip(b"=").decode()
    return f"{PREFIX}.{body}.{zlib.crc32(raw):08x}"


def _payload(token: str) -> dict[str, object]:
    bad = ReplayTokenError(f"--chaos-replay={token[:40]}{'...' if len(token) > 40 else ''}: not a replay token "
                           f"(expected {PREFIX}.<data>.<checksum>); copy the whole `replay:` line of the failing test")
    parts = token.strip().split(".")
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


def decode(token: str, nodeid: str, version: str) -> Schedule:
    """The schedule ``token`` encodes, for test ``nodeid`` under plugin ``version``;
    :class:`ReplayTokenError` naming both when the token was made by another test or version."""
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
        return Schedule(tuple(Step(str(k), str(t), str(p), int(b)) for k, t, p, b in steps))
    except (KeyError, TypeError, ValueError) as exc:
        raise ReplayTokenError(f"--chaos-replay: the token's schedule does not read here ({exc}); explore again "
                               f"to get a token of {version}") from None


def plugin_version() -> str:
    """The installed pytest-streamchaos version (what a token records)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("pytest-streamchaos")
    except PackageNotFoundError:  # a source tree that was never installed
        return "0+unknown"
