"""A user's test is type-checked against the plugin: ``def test_x(chaos: ChaosFixture):`` gives ``chaos.run``
its explicit signature, so mypy (and an editor) knows the call returns a ``ChaosRun`` (a ``RepeatedRun`` with
``repeat=N``) and calls a misspelt keyword an error, naming it.

mypy runs as in a user's project: the package is found as an installed one (on the path, not the project's
source), which mypy reads only through its ``py.typed`` marker (PEP 561), with mypy's defaults and no
configuration of this repository's.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import pytest_streamchaos

try:
    import tomllib
except ImportError:  # Python 3.10
    tomllib = pytest.importorskip("tomli")

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "pytest_streamchaos"

#: a user's test file; each line mypy must find wrong ends in ``# error: <what the message names>``
USER_TEST = '''
import pytest
from pytest_streamchaos import ChaosFixture, ChaosRun, JobSetup, Load, RepeatedRun, kill_worker


@pytest.mark.chaos
@kill_worker(after=30, restart_after=10)
def test_survives_worker_loss(chaos: ChaosFixture) -> None:
    run = chaos.run("pipelines/enrich.py", rate=500, duration=60, guarantee="exactly-once",
                    load=Load(partitions=4), setup=JobSetup(args=["{bootstrap_servers}"]))
    reveal_type(run)
    quiet: ChaosRun = chaos.run("pipelines/enrich.py", 100, 30, faults=False)
    assert run.lost == 0 and run.duplicates == 0 and quiet.downtime < run.downtime


def test_repeated(chaos: ChaosFixture) -> None:
    runs = chaos.run("pipelines/enrich.py", rate=200, duration=40, repeat=5)
    reveal_type(runs)
    low, high = runs.spread("downtime")
    one: ChaosRun = chaos.run("pipelines/enrich.py", repeat=1)
    assert high - low < 10 and one.lost == 0


def test_misspelt(chaos: ChaosFixture) -> None:
    chaos.run("job.py", rat=100)  # error: "rat"
    chaos.run("job.py", setup=JobSetup(arg=["x"]))  # error: "arg"
    chaos.run("job.py", rate="fast")  # error: "str"
    many: RepeatedRun = chaos.run("job.py")  # error: "ChaosRun"
'''


def mypy_on_a_users_project(project: Path) -> subprocess.CompletedProcess[str]:
    """mypy over ``project`` (its own directory, mypy's defaults), the package installed beside it."""
    site = project.parent / "site-packages"
    site.mkdir()
    (site / "pytest_streamchaos").symlink_to(PACKAGE, target_is_directory=True)
    (project / "setup.cfg").write_text("[metadata]\nname = a-users-project\n")  # a config of its own: no [mypy]
    env = {k: v for k, v in os.environ.items() if k not in ("MYPYPATH", "PYTHONPATH")}
    env["PYTHONPATH"] = str(site)  # on sys.path as site-packages are: mypy reads it only through py.typed
    return subprocess.run([sys.executable, "-m", "mypy", "--no-incremental", "--cache-dir", str(project / ".cache"),
                           "--config-file", str(project / "setup.cfg"), "test_user.py"],
                          cwd=project, env=env, capture_output=True, text=True, timeout=600)


def test_a_users_test_sees_chaos_run_typed_and_a_misspelt_keyword_is_an_error(tmp_path: Path) -> None:
    assert importlib.util.find_spec("mypy"), "no mypy: it is in the test extra (pip install -e '.[test]')"
    project = tmp_path / "project"
    project.mkdir()
    (project / "test_user.py").write_text(USER_TEST)
    p = mypy_on_a_users_project(project)
    out = p.stdout + p.stderr
    notes = re.findall(r"^test_user\.py:\d+: note: Revealed type is \"(.+)\"$", out, re.M)
    assert notes == ["pytest_streamchaos.analysis.result.ChaosRun",
                     "pytest_streamchaos.analysis.repeat.RepeatedRun"], out
    errors: dict[int, list[str]] = {}
    for line, message in re.findall(r"^test_user\.py:(\d+): error: (.+)$", out, re.M):
        errors.setdefault(int(line), []).append(message)
    expected = {n: want for n, text in enumerate(USER_TEST.splitlines(), 1)
                for want in re.findall(r"# error: (.+)$", text)}
    assert sorted(errors) == sorted(expected), out  # the correct calls pass, each wrong one is caught
    for line, want in expected.items():
        assert any(want in message for message in errors[line]), (line, want, out)
    assert 'Unexpected keyword argument "rat" for overloaded function "run" of "ChaosFixture"' in out
    assert 'did you mean "rate"?' in out
    assert p.returncode == 1, out


def test_the_package_ships_its_types() -> None:
    """py.typed is in the package and in the wheel's package data: without it a user's mypy reads nothing of
    the plugin (every name Any, the test above: ``module is installed, but missing library stubs``)."""
    assert (PACKAGE / "py.typed").is_file()
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    assert "py.typed" in data["pytest_streamchaos"]


def test_every_lazy_name_has_its_type_for_a_type_checker() -> None:
    """The package's names are imported on first use (``__getattr__``, which a type checker reads as Any); the
    ``if TYPE_CHECKING:`` block gives each its own type. The two lists are one: a name in only one of them is
    either missing at run time or Any in a user's editor."""
    tree = ast.parse((PACKAGE / "__init__.py").read_text())
    typed: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for imp in node.body:
                assert isinstance(imp, ast.ImportFrom) and imp.module, ast.unparse(imp)
                for alias in imp.names:
                    assert alias.asname == alias.name, f"{alias.name}: 'import X as X' re-exports it"
                    typed[alias.name] = imp.module
    assert typed == pytest_streamchaos._LAZY
    assert pytest_streamchaos.ChaosFixture.__name__ == "ChaosFixture"  # mypy's and the editor's name for it
