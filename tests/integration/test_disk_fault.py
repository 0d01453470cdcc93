"""``fill_disk`` on a real tmpfs, without Spark: the run mounts a small filesystem where the checkpoint
will be, the fault leaves no byte of it free (a write fails with "No space left on device"), the heal
frees it, and the mount is gone after the run -- also when the process that made it is SIGKILLed."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pytest_streamchaos.faults.context import FaultContext
from pytest_streamchaos.faults.families.disk import FILLER, FillDisk
from pytest_streamchaos.faults.kind import JobSite
from pytest_streamchaos.faults.registry import actions_for, parse, prepare, release
from pytest_streamchaos.faults.scheduler import FaultScheduler
from pytest_streamchaos.faults.timeline import Recorder, plan
from pytest_streamchaos.poll import wait_for

pytestmark = pytest.mark.integration


@pytest.fixture(autouse=True)
def _can_mount():
    reason = FillDisk.unavailable(parse("fill_disk"))
    if reason:
        pytest.skip(reason)


def mounted(path: Path) -> bool:
    return any(line.split()[1] == str(path) for line in Path("/proc/mounts").read_text().splitlines())


class Checkpoint:
    """The aimed faults' view of the query's checkpoint: only where it is."""

    def __init__(self, where: Path) -> None:
        self.checkpoint_dir = str(where)


def write(path: Path, data: bytes) -> int | None:
    """The errno of writing ``data`` to ``path`` (None: it was written)."""
    try:
        path.write_bytes(data)
    except OSError as exc:
        return exc.errno
    return None


def site(tmp_path: Path, *checkpoints: Path) -> JobSite:
    work = tmp_path / "jobs" / "j"
    (work / "eventlog").mkdir(parents=True)
    return JobSite(workdir=work, checkpoints=tuple(map(str, checkpoints)), harness=(work / "eventlog",),
                   storage="local")


def test_the_checkpoint_filesystem_runs_full_and_the_heal_frees_it(tmp_path: Path) -> None:
    chk = tmp_path / "run" / "checkpoint"
    spec = parse("fill_disk", kwargs={"after": 0, "duration": 1.5, "size_mb": 8})
    made = prepare([spec], site(tmp_path, chk))
    try:
        assert mounted(chk)
        (chk / "offsets").mkdir()
        assert write(chk / "offsets" / "0", b"v1\n" * 100) is None, "a write before the fault"
        rec = Recorder()
        ctx = FaultContext(cluster=None, kafka=None, job=None, input_topic="", recorder=rec, prepared=made,
                           checkpoint=Checkpoint(chk))
        with FaultScheduler(plan([spec]), actions_for(ctx), rec) as sched:
            sched.start(time.time())
            injected = wait_for(lambda: [e for e in rec.events() if e.kind == "fault_injected"], 10, "the fill")[0]
            # Spark's next checkpoint write: refused while the fault acts
            assert write(chk / "offsets" / "1", b"v1\n{}\n") == errno.ENOSPC
            assert os.strerror(errno.ENOSPC) == "No space left on device"
            wait_for(lambda: [e for e in rec.events() if e.kind == "fault_healed"], 10, "the heal")
        assert not sched.errors, sched.errors
        assert injected.target == "checkpoint" and injected.detail["free_bytes"] < 4096
        assert injected.detail["mount"] == str(chk)
        assert write(chk / "offsets" / "1", b"v1\n{}\n") is None, "after the heal the write goes through"
        assert not (chk / FILLER).exists()
    finally:
        assert release(made) == []
    assert not mounted(chk) and not (tmp_path / "run").exists(), "the mount and the directories made for it go"


def test_a_checkpoint_off_the_mount_fails_the_injection_naming_both(tmp_path: Path) -> None:
    chk, elsewhere = tmp_path / "chk", tmp_path / "computed-at-run-time"
    spec = parse("fill_disk", kwargs={"after": 0, "duration": 1})
    made = prepare([spec], site(tmp_path, chk))
    try:
        rec = Recorder()
        ctx = FaultContext(cluster=None, kafka=None, job=None, input_topic="", recorder=rec, prepared=made,
                           checkpoint=Checkpoint(elsewhere))
        with FaultScheduler(plan([spec]), actions_for(ctx), rec) as sched:
            sched.start(time.time())
            wait_for(lambda: sched.errors, 10, "the failed injection")
        assert f"the query's checkpoint ({elsewhere}) is not on the small filesystem the run mounted at {chk}" \
            in sched.errors[0]
        assert not (chk / FILLER).exists()
    finally:
        release(made)


def test_no_place_for_the_filesystem_is_one_line_and_leaves_nothing(tmp_path: Path) -> None:
    full = tmp_path / "data"
    full.mkdir()
    (full / "orders.json").write_text("{}")
    with pytest.raises(ValueError, match=r"^@fill_disk: no place where the query's checkpoint may be .*"
                                         r"args=\[\"\{checkpoint_dir\}\"\]$"):
        prepare([parse("fill_disk")], site(tmp_path, full))
    assert not mounted(full) and (full / "orders.json").exists()


CHILD = """
import signal, sys
from pathlib import Path
from pytest_streamchaos.faults.families.disk import SmallFilesystem
fs = SmallFilesystem(Path(sys.argv[1]), 4)
fs.mount()
fs.fill()
print("mounted", flush=True)
signal.pause()
"""


def test_the_mount_goes_when_the_process_that_made_it_is_killed(tmp_path: Path) -> None:
    where = tmp_path / "made" / "checkpoint"
    root = Path(__file__).resolve().parents[2]
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(where)], stdout=subprocess.PIPE, text=True,
                             cwd=root, env={**os.environ, "PYTHONPATH": str(root)})
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "mounted"
        assert mounted(where)
        child.send_signal(signal.SIGKILL)
        child.wait(10)
        wait_for(lambda: not mounted(where) and not (tmp_path / "made").exists(), 15,
                 "the reaper to unmount the tmpfs and remove its directories")
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(10)
        if mounted(where):
            subprocess.run(["umount", "-l", str(where)], check=False)
