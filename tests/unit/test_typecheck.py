"""The whole package type-checks: mypy (pinned in the ``test`` extra, configured in pyproject.toml's
``[tool.mypy]``) finds nothing in the paths below. The faults and the runner reach a backend only through
stack/base.py's types, so a backend that breaks them, or a fault that needs more, shows here; and
tests/unit/stack_conformance.py holds the local backend's classes to the protocols (result_conformance.py: the run
classes to analysis/run_view.py's)."""

import importlib.util
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: what is type-checked: every module of the package, the backend's fit to the stack's protocols, and the run
#: classes' fit to analysis/run_view.py's
TYPECHECKED_PATHS = [
    "pytest_streamchaos/",
    "tests/unit/stack_conformance.py",
    "tests/unit/result_conformance.py",
]


def test_mypy_finds_nothing():
    assert importlib.util.find_spec("mypy"), "no mypy: it is in the test extra (pip install -e '.[test]')"
    p = subprocess.run([sys.executable, "-m", "mypy", "--no-incremental", *TYPECHECKED_PATHS], cwd=ROOT,
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, f"mypy {' '.join(TYPECHECKED_PATHS)}:\n{p.stdout}{p.stderr}"
    assert "Success: no issues found" in p.stdout, p.stdout
