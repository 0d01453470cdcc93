"""Fault marks: argument validation at collection time, decorator/mark equivalence, the timeline plan."""

from __future__ import annotations

import pytest

from pytest_streamchaos import kill_driver, kill_worker, network_delay
from pytest_streamchaos.faults.registry import parse
from pytest_streamchaos.faults.spec import FaultSpecError
from pytest_streamchaos.faults.timeline import horizon, plan


def test_product_card_spellings_parse() -> None:
    s = parse("kill_worker", kwargs={"after": 600})
    assert (s.kind, s.after, s.times, s.restart_after) == ("kill_worker", 600.0, 1, None)
    d = parse("network_delay", kwargs={"ms": 500, "above_timeout": True})
    assert d.target == "kafka" and d.params == {"ms": 500, "above_timeout": True, "jitter_ms": 0}


@pytest.mark.parametrize(
    "kind, kwargs, message",
    [
        ("kill_worker", {"aftr": 3}, "unknown argument 'aftr' (did you mean 'after'?)"),
        ("kill_worker", {"after": -1}, "after=-1 must be >= 0"),
        ("kill_worker", {"after": "soon"}, "after='soon' must be a number"),
        ("kill_worker", {"times": 3}, "times=3 needs every="),
        ("kill_worker", {"every": 10, "times": 0}, "times=0 must be >= 1"),
        ("kill_worker", {"every": 10, "duration": 12}, "duration=12 must be shorter than every=10"),
        ("kill_worker", {"when": "uncommitted_output"}, "moments: 'tasks_running'"),
        ("kill_driver", {"when": "sometime"}, "moments: 'uncommitted_output'"),
        ("kill_master", {"index": "leader"}, "roles: 'active', 'standby'"),
        ("kill_worker", {"signal": "SIGSTOP"}, "signal='SIGSTOP' must be 'SIGKILL' or 'SIGTERM'"),
        ("kill_worker", {"restart_after": 5, "duration": 5}, "not both"),
        ("network_delay", {}, "missing required argument 'ms'"),
        ("network_delay", {"ms": 0}, "ms=0 must be > 0"),
        ("network_delay", {"ms": 50, "above_timeout": "yes"}, "must be True or False"),
        ("network_delay", {"ms": 50, "target": "the-cloud"}, "is not a link"),
        ("packet_loss", {"percent": 150}, "at most 100"),
        ("pause", {"target": "toaster"}, "@pause: target='toaster' must be one of"),
        ("poison_records", {"count": 1.5}, "count=1.5 must be an int"),
        ("kill_workers", {}, "unknown fault 'kill_workers'"),
    ],
)
def test_bad_arguments_name_mark_argument_and_fix(kind: str, kwargs: dict, message: str) -> None:
    with pytest.raises(FaultSpecError) as err:
        parse(kind, kwargs=kwargs)
    assert message in str(err.value)


def test_decorator_raises_at_decoration_time() -> None:
    with pytest.raises(FaultSpecError, match="@kill_worker: unknown argument 'aftr'"):
        kill_worker(aftr=3)


def test_decorator_applies_plain_mark() -> None:
    @kill_driver(when="uncommitted_output", restart_after=5)
    @network_delay(ms=200, target="broker-1")
    def f() -> None: ...

    names = [m.name for m in f.pytestmark]
    assert names == ["network_delay", "kill_driver"]
    assert f.pytestmark[1].kwargs == {"when": "uncommitted_output", "restart_after": 5}


def test_plan_expands_recurrent_faults_and_orders_them() -> None:
    specs = [
        parse("kill_worker", kwargs={"after": 10, "every": 20, "times": 3, "restart_after": 5}),
        parse("network_delay", kwargs={"ms": 100, "after": 15, "duration": 10}),
        parse("kill_driver", kwargs={"when": "uncommitted_output", "after": 5, "timeout": 30}),
    ]
    p = plan(specs)
    assert [(x.spec.kind, x.at, x.heal_after) for x in p] == [
        ("kill_driver", None, 0.0),
        ("kill_worker", 10.0, 5),
        ("network_delay", 15.0, 10),
        ("kill_worker", 30.0, 5),
        ("kill_worker", 50.0, 5),
    ]
    assert p[4].label.endswith("#3")
    assert horizon(p) == 55.0
    assert horizon(plan([parse("kill_driver", kwargs={"when": "uncommitted_output", "after": 5})])) == 5.0


def test_raw_marks_are_validated_at_collection(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import pytest
        @pytest.mark.kill_worker(afterr=3)
        def test_x(): pass
        @pytest.mark.packet_loss(percent=101)
        def test_y(): pass
        """
    )
    result = pytester.runpytest("--strict-markers")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "*invalid fault marks:*",
            "*test_x: @kill_worker: unknown argument 'afterr' (did you mean 'after'?)*",
            "*test_y: @packet_loss: percent=101 must be at most 100*",
        ]
    )


def test_decorator_typo_is_a_collection_error_of_that_module(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        from pytest_streamchaos import network_delay
        @network_delay(ms=100, above_timout=True)
        def test_x(): pass
        """
    )
    result = pytester.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*unknown argument 'above_timout' (did you mean 'above_timeout'?)*"])


def test_fault_markers_registered(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--markers")
    result.stdout.fnmatch_lines(["@pytest.mark.sla(**bounds):*"])
    result.stdout.fnmatch_lines(["@pytest.mark.kill_worker(**kwargs): fault:*"])


def test_labels_read_well() -> None:
    assert parse("kill_worker", kwargs={"after": 10}).label == "kill_worker@10s"
    assert parse("kill_executor", kwargs={"when": "tasks_running"}).label == "kill_executor when=tasks_running"
    assert parse("network_partition", kwargs={"after": 8}).label == "network_partition[kafka]@8s"
    assert parse("kill_worker", kwargs={"index": 1, "every": 20, "times": 2}).label == "kill_worker[1]@0s x2/20s"


def test_aimed_fault_arms_after_a_baseline_by_default():
    from pytest_streamchaos.faults.spec import AIMED_ARM_AFTER

    s = parse("kill_driver", kwargs={"when": "uncommitted_output"})
    assert s.after == AIMED_ARM_AFTER == 5.0
    # an explicit after= wins (also 0: the test asked for it)
    assert parse("kill_driver", kwargs={"when": "uncommitted_output", "after": 0}).after == 0.0
    assert parse("kill_worker", kwargs={}).after == 0.0  # clock-timed faults keep their default
