"""The workload seed: stable per test id across processes, overridable with ``--chaos-seed`` / ini
``streamchaos_seed``, handed to the ``chaos`` fixture's harness."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_streamchaos.workload.seed import resolve_seed, workload_seed

NODEID = "tests/chaos/test_x.py::test_worker_loss[exactly-once]"
#: this checkout, first on the path of child processes (an installed copy elsewhere must not win)
ROOT = str(Path(__file__).resolve().parents[2])


def _seed_in_fresh_process(hashseed: str) -> int:
    code = f"from pytest_streamchaos.workload.seed import workload_seed; print(workload_seed({NODEID!r}))"
    env = {**os.environ, "PYTHONHASHSEED": hashseed,
           "PYTHONPATH": os.pathsep.join(p for p in (ROOT, os.environ.get("PYTHONPATH")) if p)}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    return int(out.stdout)


def test_same_test_id_same_seed_across_processes() -> None:
    # different PYTHONHASHSEEDs: the old hash(nodeid) seed differed between these two processes
    seeds = {_seed_in_fresh_process("1"), _seed_in_fresh_process("2"), workload_seed(NODEID)}
    assert len(seeds) == 1
    assert 0 <= workload_seed(NODEID) < 2**32
    assert workload_seed(NODEID) != workload_seed(NODEID.replace("test_worker_loss", "test_worker_lost"))


def test_the_variants_of_a_parametrized_test_share_their_input() -> None:
    base = "tests/chaos/test_x.py::test_worker_loss"
    assert workload_seed(NODEID) == workload_seed(f"{base}[at-least-once]") == workload_seed(base)
    cls = "tests/chaos/test_x.py::TestA::test_y"
    assert workload_seed(f"{cls}[1]") == workload_seed(cls)


def test_override_wins() -> None:
    assert resolve_seed(NODEID, None) == workload_seed(NODEID)
    assert resolve_seed(NODEID, 7) == 7
    assert resolve_seed(NODEID, 0) == 0  # 0 is a seed, not "unset"


CONFTEST = """
import pytest

# Stand-ins for the stack: the plugin's wiring of the seed into the harness is under test here,
# and Chaos() only stores its handles until run() is called.
@pytest.fixture
def spark_cluster():
    return object()

@pytest.fixture
def kafka():
    return object()
"""

TEST = """
from pytest_streamchaos.workload.seed import workload_seed

def test_seed(chaos, request):
    print(f"SEED={chaos.seed} OWN={workload_seed(request.node.nodeid)}")
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_seeded=TEST)
    return pytester


def _seeds(result: pytest.RunResult) -> tuple[int, int]:
    line = next(ln for ln in result.stdout.lines if "SEED=" in ln)
    return int(line.split("SEED=")[1].split()[0]), int(line.split("OWN=")[1].split()[0])


def test_chaos_fixture_uses_the_test_ids_seed_by_default(project: pytest.Pytester,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    # a fresh process: its hash() salt differs from ours, the seed must not
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (ROOT, os.environ.get("PYTHONPATH")) if p))
    monkeypatch.setenv("PYTHONHASHSEED", "random")
    result = project.runpytest_subprocess("-s")
    result.assert_outcomes(passed=1)
    seed, own = _seeds(result)
    assert seed == own == workload_seed("test_seeded.py::test_seed")


def test_chaos_seed_option_and_ini_override(project: pytest.Pytester) -> None:
    result = project.runpytest("-s", "--chaos-seed", "12345")
    result.assert_outcomes(passed=1)
    assert _seeds(result)[0] == 12345
    project.makeini("[pytest]\nstreamchaos_seed = 99\n")
    result = project.runpytest("-s")
    result.assert_outcomes(passed=1)
    assert _seeds(result)[0] == 99
    result = project.runpytest("-s", "--chaos-seed=7")  # the option wins over the ini key
    assert _seeds(result)[0] == 7


def test_bad_seed_is_a_usage_error(project: pytest.Pytester) -> None:
    result = project.runpytest("--chaos-seed", "soon")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--chaos-seed / ini streamchaos_seed: 'soon' is not a valid int*"])
