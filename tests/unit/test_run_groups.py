"""chaos.run's grouped arguments (load=Load(...), watch=Watch(...), setup=JobSetup(...)): the same
run as the flat arguments, checked the same way, and a group with one of its flat arguments refused."""

from __future__ import annotations

import inspect
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest

import pytest_streamchaos
from pytest_streamchaos import IdentityOracle, JobSetup, Load, Watch
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
    chaos = Chaos(cluster=None, kafka=None, workdir=tmp_path / "work", test_dir=tmp_path)

    def build(*args: Any, **kwargs: Any) -> tuple[Any, Any]:
        with pytest.raises(Captured) as got:
            chaos.run("job.py", *args, **kwargs)
        return got.value.spec, got.value.inputs

    return build


def test_the_groups_are_public_and_their_defaults_are_the_flat_ones():
    assert {"Load", "Watch", "JobSetup"} <= set(pytest_streamchaos.__all__)
    params = inspect.signature(Chaos.run).parameters
    for group in (Load, Watch, JobSetup):
        for f in fields(group):
            flat = params[f.name].default
            assert (flat.value if isinstance(flat, Default) else flat) == f.default, f.name
    assert repr(params["rate"].default) == "200.0"  # help() shows the value


def test_grouped_arguments_build_the_same_run_as_flat_ones(built):
    ids = lambda value, key: [1]  # noqa: E731
    oracle = IdentityOracle()
    flat = built(rate=50, duration=20, partitions=3, key_space=7, skew=0.5, record_size=64, late_fraction=0.1,
                 outputs={"totals": ids}, oracle=oracle, args=["{input_topic}"], conf={"a": 1}, env={"B": 2},
                 files=["data.csv"])
    grouped = built(load=Load(rate=50, duration=20, partitions=3, key_space=7, skew=0.5, record_size=64,
                              late_fraction=0.1),
                    watch=Watch(outputs={"totals": ids}, oracle=oracle),
                    setup=JobSetup(args=["{input_topic}"], conf={"a": 1}, env={"B": 2}, files=["data.csv"]))
    assert flat[0] == grouped[0]
    assert flat[0].rate == 50 and flat[0].partitions == 3 and flat[0].files[0].endswith("data.csv")
    assert flat[1].oracle is grouped[1].oracle is oracle and grouped[1].output_ids == {"totals": ids}


def test_a_group_mixes_with_the_flat_arguments_of_other_groups(built):
    spec, inputs = built(load=Load(rate=80, duration=10), args=["{bootstrap_servers}"], settle_seconds=3)
    assert (spec.rate, spec.duration, spec.args, spec.settle_seconds) == (80, 10, ["{bootstrap_servers}"], 3)
    assert isinstance(inputs.oracle, IdentityOracle) and inputs.settle_pinned


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"load": Load(rate=10), "rate": 20}, r"both load=Load\(\.\.\.\) and rate=: give it inside Load\(\.\.\.\)"),
    ({"load": Load(), "duration": 5, "skew": 0.0}, r"both load=Load\(\.\.\.\) and duration=, skew=: give them"),
    ({"watch": Watch(), "oracle": IdentityOracle()}, r"both watch=Watch\(\.\.\.\) and oracle="),
    ({"setup": JobSetup(), "args": ["x"]}, r"both setup=JobSetup\(\.\.\.\) and args=.*or drop setup="),
])
def test_a_group_and_one_of_its_flat_arguments_is_refused_naming_both(tmp_path, kwargs, message):
    chaos = Chaos(cluster=None, kafka=None, workdir=tmp_path)
    with pytest.raises(ValueError, match=message):
        chaos.run("no_such_job.py", **kwargs)
    assert list(tmp_path.iterdir()) == [], "nothing was made"


def test_a_grouped_value_is_checked_like_the_flat_one(tmp_path):
    chaos = Chaos(cluster=None, kafka=None, workdir=tmp_path)
    with pytest.raises(ValueError, match=r"rate=-1 and duration=None must be > 0"):
        chaos.run("no_such_job.py", load=Load(rate=-1))
    with pytest.raises(ValueError, match=r"id_reader takes 3 parameters"):
        chaos.run("no_such_job.py", watch=Watch(id_reader=lambda value, key, extra: [1]))
    with pytest.raises(ValueError, match=r"args: \{nope\} in '\{nope\}' is not a placeholder"):
        chaos.run("no_such_job.py", setup=JobSetup(args=["{nope}"]))
    with pytest.raises(TypeError, match=r"load= takes a Load\(\.\.\.\), not Watch"):
        chaos.run("no_such_job.py", load=Watch())
