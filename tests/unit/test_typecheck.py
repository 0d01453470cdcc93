"""The stack interface, the faults, the runner, the run's history and its checkers type-check: mypy
(pinned in the ``test`` extra, configured in pyproject.toml's ``[tool.mypy]``) finds nothing in the
paths below. The faults reach a backend only
through stack/base.py's types, so a backend that breaks them, or a fault that needs more, shows here."""

import importlib.util
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: what is type-checked: the faults, the runner, the schedule search and the stack's door
TYPECHECKED_PATHS = [
    "pytest_streamchaos/faults/",
    "pytest_streamchaos/runner/",
    "pytest_streamchaos/search/",
    "pytest_streamchaos/stack/base.py",
    "pytest_streamchaos/stack/commands.py",
    # the run's history, the analysis and its checkers over it, and what reads their results
    "pytest_streamchaos/history.py",
    "pytest_streamchaos/facts.py",
    "pytest_streamchaos/analysis/",
    "pytest_streamchaos/client_stats.py",
    "pytest_streamchaos/report/",
    "pytest_streamchaos/plugin.py",
    "pytest_streamchaos/harness.py",
    # the local backend's classes fit the protocols of stack/base.py
    "tests/unit/stack_conformance.py",
]


def test_mypy_finds_nothing():
    assert importlib.util.find_spec("mypy"), "no mypy: it is in the test extra (pip install -e '.[test]')"
    p = subprocess.run([sys.executable, "-m", "mypy", "--no-incremental", *TYPECHECKED_PATHS], cwd=ROOT,
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, f"mypy {' '.join(TYPECHECKED_PATHS)}:\n{p.stdout}{p.stderr}"
