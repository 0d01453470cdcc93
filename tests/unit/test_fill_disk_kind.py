"""``fill_disk`` without mounting anything: its mark, its refusal of an HDFS checkpoint, where the run
expects the query's checkpoint, and which of those places can take a filesystem of their own. (The
mount, the fill and the reaper: tests/integration/test_disk_fault.py; a job: tests/chaos/test_chaos_disk_full.py.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_streamchaos import JobSetup, fill_disk
from pytest_streamchaos.faults.families.disk import mount_points
from pytest_streamchaos.faults.kind import JobSite
from pytest_streamchaos.faults.registry import check_run, kind_of, parse
from pytest_streamchaos.faults.spec import FaultSpecError
from pytest_streamchaos.runner.phases.job import checkpoint_places


def test_the_mark_fills_the_checkpoint_by_default_and_checks_its_size():
    spec = parse("fill_disk", kwargs={"after": 10, "duration": 15})
    assert (spec.target, spec.duration, spec.params) == ("checkpoint", 15, {})
    assert spec.label == "fill_disk[checkpoint]@10s"
    with pytest.raises(FaultSpecError, match="target='logs' must be one of 'checkpoint'"):
        parse("fill_disk", kwargs={"target": "logs"})
    with pytest.raises(FaultSpecError, match="size_mb=0 must be >= 1"):
        parse("fill_disk", kwargs={"size_mb": 0})

    @fill_disk(after=3, size_mb=16)
    def test_x() -> None: ...

    assert [(m.name, m.kwargs) for m in test_x.pytestmark] == [("fill_disk", {"after": 3, "size_mb": 16})]


def test_a_checkpoint_on_hdfs_is_refused_before_anything_starts():
    spec = parse("fill_disk")
    check_run([spec], checkpoint="local")
    refused = r"^@fill_disk: the run keeps its checkpoint on HDFS .* use setup=JobSetup\(checkpoint=\"local\"\)$"
    with pytest.raises(ValueError, match=refused):
        check_run([spec, parse("kill_worker")], checkpoint="hdfs")
    kill = parse("kill_worker")
    assert kind_of(kill).refused_by_run(kill, checkpoint="hdfs") is None


def test_the_run_expects_the_checkpoint_where_the_job_names_it(tmp_path: Path):
    work = tmp_path / "jobs" / "notifications"
    relative = '.option("checkpointLocation", "chk-point-dir")'
    assert checkpoint_places(relative, [], {}, None, work, "/run/checkpoint") == [str(work / "chk-point-dir")]
    absolute = 'CHECKPOINT = "/data/chk/orders"\nq.option("checkpointLocation", CHECKPOINT)'
    assert checkpoint_places(absolute, [], {}, None, work, "/run/checkpoint") == ["/data/chk/orders"]
    on_hdfs = '.option("checkpointLocation", "hdfs://nn:9820/chk")'
    assert checkpoint_places(on_hdfs, [], {}, None, work, "/run/checkpoint") == ["/run/checkpoint"]
    # args: the run's {checkpoint_dir} and an output directory the test declares
    args = ["127.0.0.1:9092", "/run/checkpoint", "/lake/out"]
    assert checkpoint_places("", args, {}, ["file:/lake/out"], work, "/run/checkpoint") == ["/run/checkpoint"]
    conf = {"spark.sql.streaming.checkpointLocation": "/chk/all-queries"}
    assert checkpoint_places("", [], conf, None, work, "/run/checkpoint") == ["/chk/all-queries"]
    # nothing named: the job reads the run's checkpoint from its STREAMCHAOS_* contract
    assert checkpoint_places("", [], {}, None, work, "/run/checkpoint") == ["/run/checkpoint"]


def test_a_mount_never_covers_the_harness_files_or_what_is_there(tmp_path: Path):
    work = tmp_path / "jobs" / "j"
    (work / "eventlog").mkdir(parents=True)
    full = tmp_path / "data"
    full.mkdir()
    (full / "input.json").write_text("{}")
    empty = tmp_path / "empty"
    empty.mkdir()
    site = JobSite(workdir=work, storage="local", harness=(work / "eventlog", work / "driver.log"),
                   checkpoints=(str(work), str(full), str(empty), str(empty / "sub"), str(work / "chk"), "/"))
    assert mount_points(site) == [empty, work / "chk"]


def test_chaos_run_refuses_it_on_hdfs_before_anything_starts(tmp_path: Path):
    from pytest_streamchaos.harness import ChaosFixture

    chaos = ChaosFixture(cluster=None, kafka=None, workdir=tmp_path / "work",
                         faults=[parse("fill_disk", kwargs={"after": 5})])
    with pytest.raises(ValueError, match=r"^@fill_disk: the run keeps its checkpoint on HDFS"):
        chaos.run("no_such_job.py", setup=JobSetup(checkpoint="hdfs"))
    assert not (tmp_path / "work").exists(), "nothing was made"
