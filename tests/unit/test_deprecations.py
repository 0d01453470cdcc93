"""The deprecation policy (docs/deprecations.md): one helper, a window of one minor version, and every
deprecated form working with a warning that names the new form -- then refused with one line naming the
version that removed it, once the installed version reaches it."""

from __future__ import annotations

import warnings

import pytest
from synthetic import stateless_trace

from pytest_streamchaos import deprecation
from pytest_streamchaos.analysis.result import ChaosRun
from pytest_streamchaos.deprecation import MOVED, Moved, StreamChaosDeprecationWarning, release
from pytest_streamchaos.history import Aim


@pytest.fixture
def installed(monkeypatch: pytest.MonkeyPatch):
    """``installed(v)``: the helper judges windows as if pytest-streamchaos ``v`` were installed."""
    return lambda version: monkeypatch.setattr(deprecation, "installed_version", lambda: version)


def test_every_window_is_one_minor_version():
    for moved in MOVED.values():
        if moved.since is not None:
            major, minor, _ = release(moved.since)
            assert release(moved.removed_in) == (major, minor + 1, 0), moved.old


def test_release_numbers_compare_as_versions():
    assert release("0.2.0") == (0, 2, 0) and release("0.3") == (0, 3, 0)
    assert release("0.3.0.dev1") == (0, 3, 0) and release("0+unknown") == (0, 0, 0)
    moved = Moved("old()", "new()", "0.2.0", "0.3.0")
    assert not moved.removed("0.2.9") and moved.removed("0.3.0rc1") and moved.removed("1.0.0")


def old_form() -> None:
    """What a deprecated attribute or function does: the warning points at its caller."""
    deprecation.use("run.faults[i].detection")


def test_the_warning_names_the_new_form_and_the_removing_version(installed):
    installed("0.2.0")
    with pytest.warns(StreamChaosDeprecationWarning) as caught:
        old_form()
    [w] = caught
    assert str(w.message) == ("run.faults[i].detection is deprecated since pytest-streamchaos 0.2.0 and goes in "
                              "0.3.0: use run.faults[i].output_symptom")
    assert w.filename == __file__, "the warning points at the caller's line"
    assert issubclass(StreamChaosDeprecationWarning, DeprecationWarning)


def test_after_its_window_the_old_form_is_one_line_naming_the_version_and_the_new_form(installed):
    installed("0.3.0")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning any more: the refusal
        with pytest.raises(AttributeError) as err:
            deprecation.use("run.faults[i].detection", error=AttributeError)
    assert str(err.value) == ("run.faults[i].detection was removed in pytest-streamchaos 0.3.0: "
                              "use run.faults[i].output_symptom")
    assert "\n" not in str(err.value)


def test_a_form_removed_before_the_policy_is_refused_whatever_the_version(installed):
    installed("0.2.0")
    with pytest.raises(TypeError, match=r"^chaos.run\(kafka_timeout_ms=\.\.\.\) was removed in pytest-streamchaos "
                                        r"0.2.0: use the job's own Kafka timeout"):
        deprecation.use("chaos.run(kafka_timeout_ms=...)")


# -- each deprecated form: works and warns in 0.2.x, refused from 0.3.0 --------------------------------------

def test_aim_as_a_dict_works_with_a_warning_until_0_3(installed):
    aim = Aim(moment="tasks_running", batch=3, phase="running", hit=True, attempts=2)
    installed("0.2.0")
    with pytest.warns(StreamChaosDeprecationWarning, match=r"aim\[key\] is deprecated .* use run.faults\[i\]\.aim\."):
        assert (aim["hit"], aim["batch"]) == (True, 3)
    with pytest.warns(StreamChaosDeprecationWarning), pytest.raises(KeyError):
        aim["nope"]
    installed("0.3.0")
    with pytest.raises(TypeError, match=r"aim\[key\] was removed in pytest-streamchaos 0.3.0: use run.faults\[i\]"):
        aim["hit"]


def test_detection_is_output_symptom_with_a_warning(installed):
    run = ChaosRun.from_trace(stateless_trace(rate=100, duration=60, faults=[30]), guarantee="at-least-once")
    [fault] = run.faults
    installed("0.2.0")
    with pytest.warns(StreamChaosDeprecationWarning, match=r"detection is deprecated"):
        assert fault.detection == fault.output_symptom
    installed("0.3.0")
    with pytest.raises(AttributeError, match=r"detection was removed in pytest-streamchaos 0.3.0"):
        fault.detection  # noqa: B018


def test_exactly_once_verified_warns_and_observer_lines_says_what_replaced_it(installed):
    run = ChaosRun.from_trace(stateless_trace(rate=100, duration=20), guarantee="at-least-once")
    installed("0.2.0")
    with pytest.warns(StreamChaosDeprecationWarning, match=r"exactly_once_verified is deprecated .* use "
                                                           r"run.exactly_once_check\['status'\]"):
        assert run.exactly_once_verified is None  # a bare trace: unknown, as before
    with pytest.raises(AttributeError, match=r"^run.observer_lines\(\) was removed in pytest-streamchaos 0.2.0: "
                                             r"use run.describe\(\)"):
        run.observer_lines  # noqa: B018


def test_job_helpers_from_the_old_package_warn_and_are_the_job_sides(installed):
    import pytest_streamchaos.job as job
    import pytest_streamchaos.spark as spark

    installed("0.2.0")
    with pytest.warns(StreamChaosDeprecationWarning, match=r"from pytest_streamchaos.spark import .* use from "
                                                           r"pytest_streamchaos.job import"):
        assert spark.job_config is job.job_config
    installed("0.3.0")
    with pytest.raises(ImportError, match=r"was removed in pytest-streamchaos 0.3.0: use from pytest_streamchaos.job"):
        from pytest_streamchaos.spark import read_kafka  # noqa: F401
    with pytest.raises(AttributeError):
        spark.no_such_name  # noqa: B018


@pytest.mark.parametrize("how", ["flag", "ini"])
def test_the_old_brokers_option_sets_kafka_brokers_with_a_warning(pytester: pytest.Pytester, how: str):
    pytester.makepyfile("def test_settings(streamchaos_settings):\n"
                        "    assert streamchaos_settings.kafka_brokers == 1\n")
    args = ["--chaos-brokers=1"] if how == "flag" else []
    if how == "ini":
        pytester.makeini("[pytest]\nstreamchaos_brokers = 1\n")
    result = pytester.runpytest_subprocess(*args)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*StreamChaosDeprecationWarning: --chaos-brokers / ini streamchaos_brokers is "
                                 "deprecated since pytest-streamchaos 0.2.0 and goes in 0.3.0: use "
                                 "--chaos-kafka-brokers / ini streamchaos_kafka_brokers*"])


def test_a_repeated_run_reads_an_attribute_of_one_run_on_its_worst_run_and_warns(installed):
    from pytest_streamchaos.analysis.repeat import RepeatedRun

    runs = RepeatedRun([ChaosRun.from_trace(stateless_trace(rate=10, duration=20))])
    installed("0.2.1")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # its own members: no warning
        assert (runs.timeline, runs.driver_launches) == (runs.worst_run.timeline, runs.worst_run.driver_launches)
    with pytest.warns(StreamChaosDeprecationWarning, match=r"RepeatedRun.<an attribute of one run> .*worst_run"):
        assert runs.exactly_once_check == runs.worst_run.exactly_once_check
    with pytest.raises(AttributeError, match="no attribute 'nonsense'"):
        runs.nonsense  # noqa: B018  (not an attribute of a run: no warning, the plain error)
    installed("0.3.0")
    with pytest.raises(AttributeError, match=r"removed in pytest-streamchaos 0.3.0: use runs.worst_run"):
        runs.exactly_once_check  # noqa: B018
