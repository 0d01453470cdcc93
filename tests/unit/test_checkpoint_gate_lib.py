"""The checkpoint gate on a real process (a Python child renaming files the way Spark's checkpoint
manager does, with the library preloaded), and the moment detector on top of it. No JVM here: that
Spark's renames go through libc is shown by tests/integration/test_checkpoint_gate.py."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from pytest_streamchaos.faults.gate_moments import gated_moment
from pytest_streamchaos.stack.checkpoint_gate import CheckpointGate, GateRule, Hold, gate_library

RENAMER = """
import ctypes, os, sys, time
if os.environ.get("THREAD_NAME"):  # name the thread as a JVM names its threads (PR_SET_NAME)
    ctypes.CDLL(None).prctl(15, os.environ["THREAD_NAME"].encode(), 0, 0, 0)
for src, dst in zip(sys.argv[1::2], sys.argv[2::2]):
    if src == "@wait":  # go on once the harness made this file (a deadline of 60 s)
        deadline = time.time() + 60
        while not os.path.exists(dst) and time.time() < deadline:
            time.sleep(0.001)
        continue
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    open(src, "w").write("v1")
    os.rename(src, dst)
    print(dst, time.time(), flush=True)
"""


@pytest.fixture(scope="module")
def library(tmp_path_factory) -> Path:
    """The library built into a cache of this module's own (the build is part of what is tested)."""
    cache = tmp_path_factory.mktemp("cache")
    old = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = str(cache)
    try:
        lib = gate_library()
        assert gate_library() == lib  # built once: the second call finds it
        assert lib.is_relative_to(cache) and (lib.parent / "done.json").is_file()
        return lib
    finally:
        if old is None:
            del os.environ["XDG_CACHE_HOME"]
        else:
            os.environ["XDG_CACHE_HOME"] = old


@pytest.fixture
def gate(tmp_path, library):
    g = CheckpointGate(tmp_path / "gate", library=library, max_hold_s=20)
    yield g
    g.close()


def renamer(gate: CheckpointGate, cp: Path, *names: str, thread: str = "") -> subprocess.Popen:
    """A child that writes ``cp/<name>`` as Spark does: a temp file beside it, renamed into place (by a
    thread named ``thread``, when given)."""
    args = []
    for name in names:
        final = cp / name.removeprefix("@wait:")
        args += ["@wait" if name.startswith("@wait:") else str(final.parent / f".{final.name}.tmp"), str(final)]
    env = {**os.environ, **gate.env(), "THREAD_NAME": thread}
    return subprocess.Popen([sys.executable, "-c", RENAMER, *args], env=env, stdout=subprocess.PIPE, text=True)


def test_it_holds_before_the_commit_rename_until_released(gate, tmp_path):
    cp = tmp_path / "cp"
    gate.arm("commits", "before", 7)
    child = renamer(gate, cp, "commits/6", "commits/7")
    held = gate.wait_held(60)
    assert held is not None and (held.log, held.when, held.batch, held.pid) == ("commits", "before", 7, child.pid)
    assert abs(held.t - time.time()) < 5
    assert (cp / "commits/6").exists(), "batch 6 is below the rule's batch: not held"
    assert child.poll() is None and not (cp / "commits/7").exists(), "held before the rename"
    gate.release()
    assert child.wait(60) == 0 and (cp / "commits/7").exists()


def test_after_the_rename_the_file_is_there_while_held(gate, tmp_path):
    cp = tmp_path / "cp"
    gate.arm("offsets", "after", 3)
    child = renamer(gate, cp, "offsets/3", "commits/3")
    held = gate.wait_held(60)
    assert held is not None and held.batch == 3 and held.when == "after"
    assert (cp / "offsets/3").exists() and not (cp / "commits/3").exists()
    gate.disarm()  # disarming lets the held thread go as well
    assert child.wait(60) == 0 and (cp / "commits/3").exists()


def test_only_the_first_match_of_an_arming_holds(gate, tmp_path):
    # a restarted driver replaying batch 7 must not be held again by the same arming
    cp = tmp_path / "cp"
    gate.arm("commits", "before", 7)
    first = renamer(gate, cp, "commits/7")
    assert gate.wait_held(60) is not None
    gate.release()
    assert first.wait(60) == 0
    second = renamer(gate, cp / "again", "commits/7", "commits/8")
    assert second.wait(60) == 0 and (cp / "again/commits/8").exists()


def test_a_release_is_never_missed_however_fast_the_harness_arms_again(gate, tmp_path):
    # released, disarmed and armed again within microseconds: the held thread must still go on (a hold
    # waits on the arming it belongs to, not on a file that comes and goes), and the next rule must hold
    cp = tmp_path / "cp"
    gate.arm("commits", "before", 3)
    child = renamer(gate, cp, "commits/3", "offsets/4", "commits/4", "@wait:armed", "offsets/5", "commits/5")
    assert gate.wait_held(60) is not None
    gate.release()
    gate.disarm()
    gate.arm("offsets", "after", 5)
    (cp / "armed").touch()  # the released child renames offsets/5 only now: the new rule is in force then
    held = gate.wait_held(60)
    assert held is not None and (held.log, held.batch, held.pid) == ("offsets", 5, child.pid)
    assert (cp / "offsets/5").exists() and not (cp / "commits/5").exists()
    gate.arm("commits", "after", 9)  # arming anew releases the thread the last arming held
    assert child.wait(60) == 0


#: what each state store provider renames into place when a task commits version 5 of its store (an
#: strace of Spark 4.2: HDFS-backed, RocksDB with changelog checkpointing, without it, checkpoint format v2)
STATE_FILES = ("state/0/1/5.delta", "state/0/1/5.changelog", "state/0/1/5.zip",
               "state/0/1/5_0f1e2d3c-aaaa-bbbb-cccc-0123456789ab.zip",
               "state/0/1/5_0f1e2d3c-aaaa-bbbb-cccc-0123456789ab.changelog",
               "state/0/3/left-keyToNumValues/5.delta")


@pytest.mark.parametrize("name", STATE_FILES)
def test_a_state_store_version_of_every_provider_and_nothing_else(gate, tmp_path, name):
    cp = tmp_path / "cp"
    gate.arm("state", "before", 5)
    others = ("sources/0/5", "state/0/1/4.delta", "state/0/1/4.zip", "commits/x5", "state/0/1/5.snapshot",
              "state/0/1/SSTs/000005-1c2d.sst", "state/0/1/_5.zip", "lake/5.zip", "state/0/1/5_.zip")
    child = renamer(gate, cp, *others, name, thread="Executor task launch worker for task 3.0")
    held = gate.wait_held(60)
    assert held is not None and (held.log, held.batch) == ("state", 5) and held.path.endswith(name)
    assert held.thread == "Executor_task_l" and held.in_task
    assert all((cp / o).exists() for o in others) and not (cp / name).exists()
    gate.release()
    assert child.wait(60) == 0


def test_disarmed_or_without_the_env_it_does_nothing(gate, tmp_path, library):
    cp = tmp_path / "cp"
    assert renamer(gate, cp, "commits/1").wait(60) == 0  # not armed
    gate.arm("commits", "before", 0)
    env = {**os.environ, "LD_PRELOAD": str(library)}  # preloaded, but no control directory
    plain = subprocess.run([sys.executable, "-c", RENAMER, str(cp / "commits/.2.tmp"), str(cp / "commits/2")],
                           env=env, timeout=10)
    assert plain.returncode == 0 and gate.held() is None


def test_a_hold_never_outlasts_its_cap(tmp_path, library):
    gate = CheckpointGate(tmp_path / "gate", library=library, max_hold_s=0.3)
    gate.arm("commits", "before", 0)
    t0 = time.monotonic()
    assert renamer(gate, tmp_path / "cp", "commits/0").wait(60) == 0
    assert 0.25 < time.monotonic() - t0 < 8
    gate.close()


def test_a_rule_is_checked():
    with pytest.raises(ValueError, match="log one of"):
        GateRule("sources", "before", 0)
    assert Hold.parse("commits before 7 12 13 1700000000500000000 stream_executio /c/my cp/commits/7") == Hold(
        "commits", "before", 7, 12, 13, 1700000000.5, "/c/my cp/commits/7", "stream_executio")
    assert Hold.parse("commits before 7 12 13 1700000000500000000 /c/commits/7") is None  # not written through


class Checkpoint:
    """A checkpoint view with batch 4 planned and 3 committed, at ``checkpoint_dir``."""

    def __init__(self, checkpoint_dir: Path | str = "/c") -> None:
        self.checkpoint_dir = str(checkpoint_dir)

    def latest_committed_batch(self) -> int | None:
        return 3

    def uncommitted_batch(self) -> int | None:
        return 4


def test_the_moment_detector_lands_its_phase_through_the_gate(gate, tmp_path):
    holds: list = []
    detect = gated_moment(gate, Checkpoint(tmp_path / "cp"), "output_visible_uncommitted", anchor=1, holds=holds)
    child = renamer(gate, tmp_path / "cp", "commits/4", "commits/5")
    aim = detect(None, threading.Event(), time.time() + 60)
    assert aim is not None and (aim.moment, aim.batch, aim.phase, aim.hit) == (
        "output_visible_uncommitted", 5, "output_visible_uncommitted", True)
    assert holds[0].pid == child.pid and child.poll() is None
    gate.release()
    assert child.wait(60) == 0


def test_only_the_tracked_querys_checkpoint_is_held_not_another_querys(gate, tmp_path):
    # a job's console query (its temporary checkpoint) commits batch 5 before the tracked Kafka query does: the
    # aimed fault must land in the tracked query's batch 5, or the replay it claims never happens (CI, 2026-11-29)
    tracked, console = tmp_path / "checkpoints/output00", tmp_path / "temporary-bbc4"
    (tmp_path / "link").symlink_to(tmp_path)  # the harness may know the checkpoint by another spelling
    detect = gated_moment(gate, Checkpoint(tmp_path / "link/checkpoints/output00"), "output_visible_uncommitted",
                          anchor=1)
    other = renamer(gate, console, "commits/4", "commits/5", "commits/6")
    aim: list = []
    t = threading.Thread(target=lambda: aim.append(detect(None, threading.Event(), time.time() + 60)))
    t.start()
    assert other.wait(60) == 0 and (console / "commits/6").exists(), "another query's commits pass through"
    child = renamer(gate, tracked, "commits/4", "commits/5")
    t.join(60)
    assert aim and aim[0] is not None and aim[0].batch == 5 and aim[0].hit
    held = gate.held()
    assert held is not None and held.pid == child.pid and held.path == str(tracked / "commits/5")
    gate.release()
    assert child.wait(60) == 0


def test_the_moment_detector_gives_up_at_its_deadline_and_disarms(gate):
    detect = gated_moment(gate, Checkpoint(), "between_batches")
    assert detect(None, threading.Event(), time.time() + 0.2) is None
    assert not (gate.dir / "arm").exists()
    with pytest.raises(ValueError, match="cannot land phase 'idle'"):
        gated_moment(gate, Checkpoint(), "idle")


def test_a_task_finishing_its_output_is_held_with_the_batch_planned_then(gate, tmp_path):
    # a map task's shuffle file, or a file-writing task's commit (FileOutputCommitter v1): no batch in the name
    detect = gated_moment(gate, Checkpoint(), "tasks_running")
    child = renamer(gate, tmp_path / "blockmgr", "0c/shuffle_3_7_0.index", "0d/shuffle_3_7_0.data")
    aim = detect(None, threading.Event(), time.time() + 60)
    assert aim is not None and aim.batch == 4 and aim.phase == "tasks_running"
    held = gate.held()
    assert held is not None and held.log == "task" and held.path.endswith("shuffle_3_7_0.data")
    gate.release()
    assert child.wait(60) == 0
    gate.arm("task", "before", 0)
    committer = renamer(gate, tmp_path / "lake", "_temporary/0/task_202611260000_0001_m_000001/x")
    # the attempt directory renamed to its task name: the child renames a file to .../task_.../x, whose
    # parent path holds _temporary/ and whose name does not start with task_: not held
    assert committer.wait(60) == 0
    committer = renamer(gate, tmp_path / "lake2", "_temporary/0/task_202611260000_0001_m_000001")
    assert gate.wait_held(60) is not None
    gate.release()
    assert committer.wait(60) == 0


def test_a_state_store_file_renamed_outside_a_task_is_not_a_state_commit(gate, tmp_path):
    # RocksDB with changelog checkpointing uploads a snapshot (V.zip) from a background thread: the hold
    # is reported, as a miss, in phase state_upload
    detect = gated_moment(gate, Checkpoint(tmp_path / "cp"), "state_commit")
    child = renamer(gate, tmp_path / "cp", "state/0/0/5.zip", thread="rocksdb-maintenance")
    aim = detect(None, threading.Event(), time.time() + 60)
    assert aim is not None and (aim.batch, aim.phase, aim.hit) == (4, "state_upload", False)
    gate.release()
    assert child.wait(60) == 0
    for thread in ("Executor task launch worker", "ChecksumCheckpointFileManager-Thread-2"):
        # a task's own thread; with checkpoint format v2 on Spark 4, the checksum file manager's pool, which
        # renames the task's file while the task waits for it
        detect = gated_moment(gate, Checkpoint(tmp_path / thread[:4]), "state_commit")
        child = renamer(gate, tmp_path / thread[:4], "state/0/1/5_1a2b.changelog", thread=thread)
        aim = detect(None, threading.Event(), time.time() + 60)
        assert aim is not None and (aim.batch, aim.phase, aim.hit) == (4, "state_commit", True), thread
        gate.release()
        assert child.wait(60) == 0
