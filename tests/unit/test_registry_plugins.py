"""A backend is one registry entry and its own folder (issue 50): a fake storage and a fake cluster manager
(:mod:`fake_backend`) plugged into :data:`~pytest_streamchaos.storages.STORAGES` and
:data:`~pytest_streamchaos.managers.MANAGERS` -- and nowhere else -- are options' choices and help, valid marks and
``JobSetup(checkpoint=...)`` values, planned runs, preflights, steps of ``prepare``, fixtures whose services are
their protocols, timeline kinds (and what each says of a fault, for the metrics), fault families whose kinds are
marks, planned, refused where they cannot act, fired and judged, and checks every run is judged with. Any of these
paths that still knew only the built-in names fails here."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import fake_backend
import pytest

from pytest_streamchaos import events, managers, prepare, settings, storages
from pytest_streamchaos.analysis import checkers
from pytest_streamchaos.analysis.checkers import default_checkers
from pytest_streamchaos.analysis.params import reaction_kinds, system_detection_kinds
from pytest_streamchaos.events import TimelineEvent
from pytest_streamchaos.faults import marks
from pytest_streamchaos.faults.registry import KINDS, check_run, parse, refused_by_stack
from pytest_streamchaos.faults.spec import FaultSpec
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
    # the timeline's vocabulary as it was: the fakes' kinds (added when a session in this process starts) go with them
    monkeypatch.setattr(events, "_BACKEND_KINDS", dict(events._BACKEND_KINDS))
    monkeypatch.setattr(events, "_REACTIONS", dict(events._REACTIONS))
    monkeypatch.setattr(checkers, "_BACKEND_CHECKS", dict(checkers._BACKEND_CHECKS))  # and their checks


def test_the_options_offer_them_with_their_help(fakes: None, pytester: pytest.Pytester) -> None:
    by_name = {o.name: o for o in settings.options()}
    assert by_name["checkpoint"].choices == ("local", "hdfs", "s3", "fakefs")
    assert by_name["spark"].choices == ("standalone", "yarn", "connect", "connect-yarn", "k8s", "fake")
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
    assert TimelineEvent(1.0, "fakefs_ready").kind is fake_backend.FakeStoreKind.STORE_READY
    assert TimelineEvent(1.0, "fake_cluster_jolted").kind is fake_backend.FakeClusterKind.CLUSTER_JOLTED
    # what each says of a fault, for the recovery metrics: the cluster jolted is the system noticing it, the store
    # ready a step of its healing
    assert fake_backend.FakeClusterKind.CLUSTER_JOLTED in system_detection_kinds()
    assert fake_backend.FakeStoreKind.STORE_READY in reaction_kinds() - set(system_detection_kinds())
    assert fake_backend.FakeStoreKind.STORE_WOBBLED not in reaction_kinds()


def test_their_fault_families_are_marks_planned_and_refused_where_they_cannot_act(fakes: None, tmp_path: Path,
                                                                                   pytester: pytest.Pytester) -> None:
    assert KINDS["wobble_store"] is fake_backend.WobbleStore and KINDS["jolt_cluster"] is fake_backend.JoltCluster
    assert marks.wobble_store(after=1).name == "wobble_store"
    assert any(line.startswith("jolt_cluster(") for line in marks.marker_lines())
    with pytest.raises(ValueError, match=r"@wobble_store.*'timez'"):
        parse("wobble_store", kwargs={"timez": 2})
    wobble, jolt = parse("wobble_store", kwargs={"after": 1}), parse("jolt_cluster", kwargs={"after": 1})
    fake_cluster = fake_backend.FakeCluster()
    spec, _ = _planned(tmp_path, JobSetup(checkpoint="fakefs"), [wobble, jolt], stack=(fake_cluster, None))
    assert spec.checkpoint == "fakefs"
    with pytest.raises(ValueError, match=r"@wobble_store acts on the stack's FakeFS, which this run does not use: .*"
                                         r"checkpoint='fakefs'"):
        _planned(tmp_path, JobSetup(checkpoint="local"), [wobble])
    standalone = SimpleNamespace(manager="standalone")
    assert refused_by_stack(jolt, standalone, None) == (  # type: ignore[arg-type]
        "@jolt_cluster cannot run on the standalone Spark cluster (SimpleNamespace): it needs Jolts (Jolt the "
        "cluster: a capability the fake manager brings of its own (not in the stack's capabilities)), which that "
        "cluster lacks; fix: run the test on a cluster manager that has it")
    assert [c.name for c in default_checkers().all][-1] == "s3"
    pytester.makepyfile('import pytest\n\n@pytest.mark.wobble_store(after=1)\ndef test_x(): pass\n\n'
                        '@pytest.mark.wobble_store(aftr=1)\ndef test_y(): pass\n')
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "--co", "-q", "--strict-markers")
    errors = [line for line in result.stderr.str().splitlines() if "wobble_store" in line]
    assert len(errors) == 1 and "test_y" in errors[0] and "'aftr'" in errors[0], errors  # test_x's mark is valid
    # the session the plugin started judges every run with the fake storage's check too
    assert [c.name for c in default_checkers().all][-2:] == ["s3", "fake_wobbles"]


#: a test that runs on the fake cluster with its checkpoint on the fake storage, as far as no job is started
ON_THE_FAKES = '''
import dataclasses
import time
from types import SimpleNamespace

import fake_backend
import pytest
from synthetic import T0, stateless_trace

from pytest_streamchaos import storages
from pytest_streamchaos.analysis.checker import run_all
from pytest_streamchaos.analysis import checkers
from pytest_streamchaos.analysis.checkers import default_checkers
from pytest_streamchaos.faults.context import FaultContext
from pytest_streamchaos.faults.registry import actions_for, parse
from pytest_streamchaos.faults.scheduler import FaultScheduler
from pytest_streamchaos.faults.timeline import Recorder, plan
from pytest_streamchaos.history import History
from pytest_streamchaos.poll import wait_for
from pytest_streamchaos.records import Trace
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

    # a planned run of both fault families: fired and healed on the run's clock, their kinds on its timeline, judged
    offset = time.time() - (T0 + 20)
    recorder = Recorder(clock=lambda: time.time() - offset)
    ctx = dataclasses.replace(ctx, recorder=recorder)
    planned = plan([parse("wobble_store", kwargs={"after": 0.1, "duration": 0.1}),
                    parse("jolt_cluster", kwargs={"after": 0.1})])
    scheduler = FaultScheduler(planned, actions_for(ctx), recorder, clock=recorder.clock)
    scheduler.start(recorder.clock())
    try:
        wait_for(scheduler.done, 30, "the fakes' faults fired and healed")
    finally:
        scheduler.stop()
    assert not scheduler.errors and fake_store.wobbled == 2 and spark_cluster.jolted == 1
    kinds = [e.kind for e in recorder.events()]
    assert {fake_backend.FakeStoreKind.STORE_WOBBLED, fake_backend.FakeStoreKind.STORE_READY,
            fake_backend.FakeClusterKind.CLUSTER_JOLTED} <= set(kinds)
    t = stateless_trace(rate=100.0, duration=60)
    history = History(Trace(t.sent, t.outputs, batches=[], timeline=[*t.timeline, *recorder.events()],
                            phases=t.phases, trigger_seconds=1.0))
    assert sorted(f.kind for f in history.faults) == ["jolt_cluster", "wobble_store"]
    results = run_all(default_checkers(guarantee="at-least-once").all, history)
    assert results["fake_wobbles"].numbers == {"wobbles": 1}
    assert results["faults"].ok is True, results["faults"].lines
'''


def test_a_test_gets_their_fixtures_and_a_run_their_service(fakes: None, pytester: pytest.Pytester) -> None:
    pytester.makepyfile(ON_THE_FAKES)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "--chaos-checkpoint=fakefs")
    result.assert_outcomes(passed=1)


def _planned(tmp_path: Path, setup: JobSetup, faults: list[FaultSpec] | None = None,
             stack: tuple | None = None) -> tuple:
    """``chaos.run``'s planning of a run of an empty job with ``setup`` and ``faults`` on ``stack`` (the session's
    clusters): its spec and inputs (nothing started)."""
    job = tmp_path / "job.py"
    job.write_text("")
    groups = RunGroups(load=Load(duration=10), watch=Watch(), setup=setup, timing=Timing())
    return build_run(job, place=JobPlace(), faults=faults or [], groups=groups, guarantee="at-least-once",
                     default_checkpoint=storages.DEFAULT, stack=stack)


def test_the_yarn_managers_preflight_refuses_a_conf_dir_that_is_not_there(pytester: pytest.Pytester) -> None:
    """The built-in preflight, named by both YARN managers' entries: run once when the session starts."""
    missing = pytester.path / "no-such-conf"
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", f"--chaos-yarn-conf={missing}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*--chaos-yarn-conf: YARN conf dir {missing} does not exist; fix: *"])
