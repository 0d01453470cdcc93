"""chaos.run's grouped arguments (load=Load(...), watch=Watch(...), setup=JobSetup(...), timing=Timing(...)):
the few flat arguments build the same run as their groups, every group reaches the run, checked the same
way; a group with one of its flat arguments is refused, and an argument that lives in a group names it."""

from __future__ import annotations

import inspect
import sys
import typing
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest

import pytest_streamchaos
from pytest_streamchaos import ChaosFixture, IdentityOracle, JobSetup, Load, MetricParams, Timing, Watch
from pytest_streamchaos.runner import Chaos
from pytest_streamchaos.runner import chaos as chaos_module
from pytest_streamchaos.runner.groups import Default


class Captured(Exception):
    """Raised instead of starting the run: carries what Chaos.run built."""

    def __init__(self, spec: Any, inputs: Any) -> None:
        super().__init__("captured")
        self.spec, self.inputs = spec, inputs


class NoRun:
    """Stands in for runner.run.Run: nothing starts, the spec and inputs come back."""

    def __init__(self, chaos: Any, spec: Any, inputs: Any) -> None:
        raise Captured(spec, inputs)


@pytest.fixture
def built(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Calls chaos.run on a real job file and returns (RunSpec, RunInputs) without starting anything."""
    (tmp_path / "job.py").write_text("")
    (tmp_path / "data.csv").write_text("")
    monkeypatch.setattr(chaos_module, "Run", NoRun)
    chaos = ChaosFixture(cluster=None, kafka=None, workdir=tmp_path / "work", test_dir=tmp_path)

    def build(*args: Any, **kwargs: Any) -> tuple[Any, Any]:
        with pytest.raises(Captured) as got:
            chaos.run("job.py", *args, **kwargs)
        return got.value.spec, got.value.inputs

    return build


def test_the_groups_are_public_and_their_defaults_are_the_flat_ones():
    assert {"Load", "Watch", "JobSetup", "Timing"} <= set(pytest_streamchaos.__all__)
    params = {name: p for name, p in inspect.signature(ChaosFixture.run).parameters.items() if name not in HARNESS_OWN}
    # self, job, the flat arguments and the four groups (reference= is Watch's, flat for the headline call)
    assert len(params) <= 14, list(params)
    for group in (Load, Watch, JobSetup, Timing):
        for f in fields(group):
            if f.name in params:  # a flat argument of the group: the same default
                flat = params[f.name].default
                assert (flat.value if isinstance(flat, Default) else flat) == f.default, f.name
    assert repr(params["rate"].default) == "200.0"  # help() shows the value


def _described(param: inspect.Parameter) -> tuple[Any, ...]:
    """What a caller sees of a parameter: name, kind, annotation and default (a :class:`Default`'s value)."""
    value = param.default.value if isinstance(param.default, Default) else param.default
    return param.name, param.kind, param.annotation, value


#: the fixture's own arguments: how many runs, and whether the test's fault marks play -- not what one run is
HARNESS_OWN = ("repeat", "faults")


def test_the_call_is_written_once_the_runner_takes_it_grouped():
    """What a test calls (``chaos.run``: typed, so an editor checks each keyword) is the one place the call's
    arguments are written; the runner the fixture holds takes them folded into their groups. The runner's limit
    above stays the rule for the call: a new flat argument has to go through it; repeat= and faults= are not run
    arguments, and a group would hide them where every test reading a repeat looks."""
    assert list(inspect.signature(Chaos.run).parameters) == ["self", "job", "groups", "guarantee"]
    fixture = list(inspect.signature(ChaosFixture.run).parameters.values())
    assert [_described(p) for p in fixture[-len(HARNESS_OWN):]] == [
        ("repeat", inspect.Parameter.KEYWORD_ONLY, "int | None", None),
        ("faults", inspect.Parameter.KEYWORD_ONLY, "bool", True)]
    assert ChaosFixture.run.__doc__ and "``repeat=N``" in ChaosFixture.run.__doc__
    assert not issubclass(ChaosFixture, Chaos), "the fixture holds its runner"


@pytest.mark.skipif(sys.version_info < (3, 11), reason="typing.get_overloads is Python 3.11's")
def test_each_typed_overload_of_the_fixtures_run_is_its_signature_but_for_repeat():
    """The overloads an editor shows (one ChaosRun; a RepeatedRun for repeat=N) carry the real defaults, and
    differ from the signature only in ``repeat``'s type and the return type."""
    real = [_described(p) for p in inspect.signature(ChaosFixture.run).parameters.values() if p.name != "repeat"]
    overloads = typing.get_overloads(ChaosFixture.run)
    assert [inspect.signature(o).return_annotation for o in overloads] == ["ChaosRun", "RepeatedRun"]
    for o in overloads:
        assert [_described(p) for p in inspect.signature(o).parameters.values() if p.name != "repeat"] == real
    assert [inspect.signature(o).parameters["repeat"].annotation for o in overloads] == ["Literal[1] | None", "int"]


def test_the_fixtures_run_hands_the_runner_what_the_test_gave(tmp_path, monkeypatch):
    """Positional or keyword, the fixture's run builds the same run; a misspelt keyword gets the did-you-mean,
    which names the fixture's own arguments too."""
    (tmp_path / "job.py").write_text("")
    monkeypatch.setattr(chaos_module, "Run", NoRun)
    fixture = ChaosFixture(cluster=None, kafka=None, workdir=tmp_path / "b", test_dir=tmp_path)
    oracle = IdentityOracle()
    same: list[tuple[tuple[Any, ...], dict[str, Any]]] = [
        ((50, 20, "exactly-once", oracle), {"kafka_port": 9092, "inputs": {"orders": None}}),
        ((), {"rate": 50, "duration": 20, "guarantee": "exactly-once", "oracle": oracle, "kafka_port": 9092,
              "inputs": {"orders": None}})]
    built = []
    for args, kwargs in same:
        with pytest.raises(Captured) as got:
            fixture.run("job.py", *args, **kwargs)
        inputs = got.value.inputs
        built.append((got.value.spec, inputs.oracle, inputs.id_reader, inputs.output_ids, inputs.factories))
    assert built[0] == built[1]
    with pytest.raises(TypeError, match=r"'rat': did you mean rate=\?"):
        fixture.run("job.py", rat=5)  # type: ignore[call-overload]
    with pytest.raises(TypeError, match=r"'zzz'; it takes .*faults, .*repeat, setup"):
        fixture.run("job.py", zzz=1)  # type: ignore[call-overload]


def test_grouped_arguments_build_the_same_run_as_flat_ones(built):
    ids = lambda value, key: [1]  # noqa: E731
    oracle = IdentityOracle()
    flat = built(rate=50, duration=20, outputs={"totals": ids}, oracle=oracle, kafka_port=9092,
                 inputs={"orders": None})
    grouped = built(load=Load(rate=50, duration=20, inputs={"orders": None}),
                    watch=Watch(outputs={"totals": ids}, oracle=oracle), setup=JobSetup(kafka_port=9092))
    assert flat[0] == grouped[0]
    assert flat[0].rate == 50 and flat[0].kafka_port == 9092 and flat[0].inputs == ["orders"]
    assert flat[1].oracle is grouped[1].oracle is oracle and grouped[1].output_ids == {"totals": ids}


def test_every_group_reaches_the_run(built):
    params = MetricParams(throughput_band=0.5)
    spec, inputs = built(load=Load(rate=80, duration=10, partitions=3, key_space=7, skew=0.5, record_size=64,
                                   late_fraction=0.1),
                         watch=Watch(id_reader="key", params=params),
                         setup=JobSetup(args=["{bootstrap_servers}"], supervise=True, stale_checkpoint="clear",
                                        checkpoint="local"),
                         timing=Timing(trigger_seconds=0.5, warmup_timeout=30, drain_timeout=20, settle_seconds=3))
    assert (spec.rate, spec.duration, spec.partitions, spec.key_space, spec.skew, spec.record_size,
            spec.late_fraction) == (80, 10, 3, 7, 0.5, 64, 0.1)
    assert (spec.args, spec.supervise, spec.stale_checkpoint, spec.checkpoint) == (
        ["{bootstrap_servers}"], True, "clear", "local")
    assert (spec.trigger_seconds, spec.warmup_timeout, spec.drain_timeout, spec.settle_seconds) == (0.5, 30, 20, 3)
    assert inputs.id_reader == "key" and inputs.params is params and inputs.settle_pinned
    assert isinstance(inputs.oracle, IdentityOracle)


@pytest.mark.parametrize(("kwargs", "message"), [
    # a flat argument of 0.1.0: the version that removed it and the new form (docs/deprecations.md)
    ({"args": ["x"]}, r"^chaos.run\(args=\.\.\.\) was removed in pytest-streamchaos 0.2.0: use chaos.run\(\.\.\., "
                      r"setup=JobSetup\(args=\.\.\.\)\) \(from pytest_streamchaos import JobSetup\)$"),
    ({"partitions": 4}, r"partitions=\.\.\.\) was removed in .* 0.2.0: use .* load=Load\(partitions=\.\.\.\)"),
    ({"params": None}, r"params=\.\.\.\) was removed in .* 0.2.0: use .* watch=Watch\(params=\.\.\.\)"),
    ({"settle_seconds": 3}, r"settle_seconds=\.\.\.\) was removed .*: use .* timing=Timing\(settle_seconds=\.\.\.\)"),
    ({"kafka_timeout_ms": 500}, r"kafka_timeout_ms=\.\.\.\) was removed in .* 0.2.0: use the job's own Kafka timeout"),
    # a group field that was never flat: named with its group, no version
    ({"deploy_mode": "client"}, r"got deploy_mode=: it is an argument of the JobSetup group; fix: .*"
                                r"setup=JobSetup\(deploy_mode=\.\.\.\)"),
    ({"rat": 5}, r"unexpected keyword argument 'rat': did you mean rate=\?"),
    ({"trigger_second": 1}, r"'trigger_second': did you mean timing=Timing\(trigger_seconds=\.\.\.\)\?"),
    ({"zzz": 1}, r"unexpected keyword argument 'zzz'; it takes duration, faults, guarantee, inputs, kafka_port, load"),
])
def test_an_argument_that_lives_in_a_group_is_named_with_its_group(tmp_path, kwargs, message):
    chaos = ChaosFixture(cluster=None, kafka=None, workdir=tmp_path)
    with pytest.raises(TypeError, match=message):
        chaos.run("no_such_job.py", **kwargs)
    assert list(tmp_path.iterdir()) == [], "nothing was made"


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"load": Load(rate=10), "rate": 20}, r"got rate= both in load=Load\(\.\.\.\) and on its own: give it once"),
    ({"load": Load(duration=5, inputs={"a": None}), "duration": 5, "inputs": {}},
     r"got duration=, inputs= both in load=Load\(\.\.\.\) and on its own: give them once"),
    ({"watch": Watch(oracle=IdentityOracle()), "oracle": IdentityOracle()}, r"got oracle= both in watch=Watch"),
    ({"setup": JobSetup(kafka_port=9093), "kafka_port": 9092},
     r"got kafka_port= both in setup=JobSetup\(\.\.\.\) and on its own.*inside JobSetup\(\.\.\.\) or flat"),
])
def test_a_field_given_both_flat_and_in_its_group_is_refused_naming_it(tmp_path, kwargs, message):
    chaos = ChaosFixture(cluster=None, kafka=None, workdir=tmp_path)
    with pytest.raises(ValueError, match=message):
        chaos.run("no_such_job.py", **kwargs)
    assert list(tmp_path.iterdir()) == [], "nothing was made"


def test_a_grouped_value_is_checked_like_the_flat_one(tmp_path):
    chaos = ChaosFixture(cluster=None, kafka=None, workdir=tmp_path)
    with pytest.raises(ValueError, match=r"rate=-1 and duration=None must be > 0"):
        chaos.run("no_such_job.py", load=Load(rate=-1))
    with pytest.raises(ValueError, match=r"id_reader takes 3 parameters"):
        chaos.run("no_such_job.py", watch=Watch(id_reader=lambda value, key, extra: [1]))
    with pytest.raises(ValueError, match=r"args: \{nope\} in '\{nope\}' is not a placeholder"):
        chaos.run("no_such_job.py", setup=JobSetup(args=["{nope}"]))
    with pytest.raises(TypeError, match=r"load= takes a Load\(\.\.\.\), not Watch"):
        chaos.run("no_such_job.py", load=Watch())
