"""A backend is one registry entry and its own folder (issue 50): a fake storage and a fake cluster manager
(:mod:`fake_backend`) plugged into :data:`~pytest_streamchaos.storages.STORAGES` and
:data:`~pytest_streamchaos.managers.MANAGERS` -- and nowhere else -- are options' choices and help, valid marks and
``JobSetup(checkpoint=...)`` values, planned runs, preflights, steps of ``prepare``, fixtures whose services are
their protocols and timeline kinds. Any of these paths that still knew only the built-in names fails here."""

from __future__ import annotations

from pathlib import Path

import fake_backend
import pytest

from pytest_streamchaos import managers, prepare, settings, storages
from pytest_streamchaos.events import TimelineEvent
from pytest_streamchaos.faults.registry import check_run, parse
from pytest_streamchaos.observe.storage import locate
from pytest_streamchaos.runner.groups import JobSetup, Load, Timing, Watch
from pytest_streamchaos.runner.phases.job import unreachable_checkpoints
from pytest_streamchaos.runner.spec import JobPlace, RunGroups, build_run, check_outputs


@pytest.fixture
def fakes(monkeypatch: pytest.MonkeyPatch) -> None:
    """The registries with the fake storage and the fake manager added, as one entry each would add them."""
    monkeypatch.setitem(storages.STORAGES, fake_backend.STORAGE.name, fake_backend.STORAGE)
    monkeypatch.setitem(managers.MANAGERS, fake_backend.MANAGER.name, fake_backend.MANAGER)
    monkeypatch.setattr(fake_backend, "PREFLIGHTS", [])


def test_the_options_offer_them_with_their_help(fakes: None, pytester: pytest.Pytester) -> None:
    by_name = {o.name: o for o in settings.options()}
    assert by_name["checkpoint"].choices == ("local", "hdfs", "s3", "fakefs")
    assert by_name["spark"].choices == ("standalone", "yarn", "connect", "connect-yarn", "fake")
    assert "'fakefs' (a fake store, for the registries' test)" in by_name["checkpoint"].help
    assert "'fake' (a fake cluster manager, for the registries' test)" in by_name["spark"].help
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "--help")
    assert result.ret == 0
    assert "'fake' (a fake cluster manager" in " ".join(result.stdout.str().split())


def test_the_marks_and_the_job_setup_take_them(fakes: None, pytester: pytest.Pytester, tmp_path: Path) -> None:
    pytester.makepyfile('import pytest\n\n@pytest.mark.chaos(spark="fake")\ndef test_x(): pass\n\n'
                        '@pytest.mark.chaos(spark="fakee")\ndef test_y(): pass\n')
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "--co", "-q")
    assert result.ret != 0
    errors = [line for line in result.stderr.str().splitlines() if "@chaos" in line]
    assert len(errors) == 1 and "test_y" in errors[0] and "'fake'" in errors[0], errors  # test_x's mark is valid
    spec, inputs = _planned(tmp_path, JobSetup(checkpoint="fakefs"))
    assert spec.checkpoint == "fakefs" and inputs.urls == ()


def test_what_the_storage_cannot_serve_is_refused_from_its_entry(fakes: None, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"checkpoint gate, .* \(on FakeFS a rename is a fake\)"):
        check_run([parse("kill_driver", kwargs={"when": "offsets_logged"})], checkpoint="fakefs")
    with pytest.raises(ValueError, match=r"a Delta table on FakeFS cannot be read"):
        check_outputs({"delta:table": "id"}, "fakefs")
    with pytest.raises(ValueError, match=r"an fakefs:// path, but this run has no FakeFS"):
        locate("fakefs://store/chk")
    source = 'q.option("checkpointLocation", "fakefs://store/chk")\n'
    assert unreachable_checkpoints(source, "local") == ["fakefs://store/chk"]
    assert unreachable_checkpoints(source, "fakefs") == []


def test_their_preflight_steps_and_kinds_are_the_entries(fakes: None, pytester: pytest.Pytester,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """The preflight both entries name runs once when the session starts, and its line refuses the session; their
    own step of ``prepare`` is a profile's of each; their kinds are the timeline's."""
    assert pytester.runpytest_inprocess("-p", "no:cacheprovider").ret == pytest.ExitCode.NO_TESTS_COLLECTED
    assert fake_backend.PREFLIGHTS == [("fake", "standalone")]
    monkeypatch.setenv(fake_backend.REFUSE, "fake: the fake cluster does not answer; fix: none")
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*fake: the fake cluster does not answer; fix: none*"])
    assert "fake-jars" in prepare.steps() and "fake-jars" not in prepare.profile_steps(["all"])
    assert prepare.profile_steps(["fake"])[-1] == prepare.profile_steps(["fakefs"])[-1] == "fake-jars"
    assert prepare.prepare(("fake-jars",)) == 0  # up to date: nothing runs
    assert TimelineEvent(1.0, "fakefs_ready").kind is fake_backend.FakeKind.STORE_READY


#: a test that runs on the fake cluster with its checkpoint on the fake storage, as far as no job is started
ON_THE_FAKES = '''
from types import SimpleNamespace

import fake_backend
import pytest

from pytest_streamchaos import storages
from pytest_streamchaos.faults.context import FaultContext
from pytest_streamchaos.protocols import StorageService
from pytest_streamchaos.runner.run import run_storage


@pytest.mark.chaos(spark="fake")
def test_on_the_fakes(spark_cluster, fake_store, request, tmp_path):
    assert isinstance(spark_cluster, fake_backend.FakeCluster) and spark_cluster.manager == "fake"
    assert isinstance(fake_store, StorageService) and isinstance(fake_store, storages.get("fakefs").service_protocol())
    assert (fake_store.started, fake_store.healed) == (1, 1)
    run = run_storage(SimpleNamespace(fixture=request.getfixturevalue), SimpleNamespace(checkpoint="fakefs"),
                      SimpleNamespace(urls=()), tmp_path, "t1")
    assert run.service is fake_store and run.checkpoint == "fakefs://store/streamchaos/t1/checkpoint"
    assert run.conf["spark.hadoop.fs.defaultFS"] == "fakefs://store"
    assert run.conf["spark.hadoop.fs.fakefs.impl"] == "org.example.FakeFileSystem"
    ctx = FaultContext(cluster=spark_cluster, kafka=None, job=None, input_topic="in", stores=run.services())
    ctx.store(fake_backend.Wobbly).wobble()
    assert fake_store.wobbled == 1
'''


def test_a_test_gets_their_fixtures_and_a_run_their_service(fakes: None, pytester: pytest.Pytester) -> None:
    pytester.makepyfile(ON_THE_FAKES)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "--chaos-checkpoint=fakefs")
    result.assert_outcomes(passed=1)


def _planned(tmp_path: Path, setup: JobSetup) -> tuple:
    """``chaos.run``'s planning of a run of an empty job with ``setup``: its spec and inputs (nothing started)."""
    job = tmp_path / "job.py"
    job.write_text("")
    groups = RunGroups(load=Load(duration=10), watch=Watch(), setup=setup, timing=Timing())
    return build_run(job, place=JobPlace(), faults=[], groups=groups, guarantee="at-least-once",
                     default_checkpoint=storages.DEFAULT)


def test_the_yarn_managers_preflight_refuses_a_conf_dir_that_is_not_there(pytester: pytest.Pytester) -> None:
    """The built-in preflight, named by both YARN managers' entries: run once when the session starts."""
    missing = pytester.path / "no-such-conf"
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", f"--chaos-yarn-conf={missing}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*--chaos-yarn-conf: YARN conf dir {missing} does not exist; fix: *"])
