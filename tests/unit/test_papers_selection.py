"""The selection rule of slow tests (tests/conftest.py): a test marked ``slow`` -- the papers' full
versions, the variants of a long scenario -- runs only when ``-m`` names ``slow``; every test in
tests/papers is marked ``papers`` and ``chaos`` (tests/papers/conftest.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

TESTS_DIR = Path(__file__).resolve().parents[1]
CONFTEST = TESTS_DIR / "papers" / "conftest.py"
TESTS = """
import pytest

@pytest.mark.papers
@pytest.mark.chaos
def test_short(): pass

@pytest.mark.papers
@pytest.mark.chaos
@pytest.mark.slow
def test_full(): pass
"""


def _papers(pytester: pytest.Pytester, tests: str = TESTS) -> None:
    pytester.makeini("[pytest]\nmarkers =\n    papers: x\n    slow: x\n")
    top = pytester.mkdir("tests")
    top.joinpath("conftest.py").write_text((TESTS_DIR / "conftest.py").read_text())
    d = top.joinpath("papers")
    d.mkdir()
    d.joinpath("conftest.py").write_text(CONFTEST.read_text())
    d.joinpath("test_p.py").write_text(tests)


def test_short_versions_run_by_default_and_full_ones_only_with_m_slow(pytester: pytest.Pytester) -> None:
    _papers(pytester)
    pytester.runpytest("-p", "no:streamchaos").assert_outcomes(passed=1, deselected=1)
    pytester.runpytest("-p", "no:streamchaos", "-m", "chaos").assert_outcomes(passed=1, deselected=1)
    pytester.runpytest("-p", "no:streamchaos", "-m", "slow").assert_outcomes(passed=1, deselected=1)
    pytester.runpytest("-p", "no:streamchaos", "-m", "papers or slow").assert_outcomes(passed=2)


def test_a_slow_test_anywhere_runs_only_with_m_slow(pytester: pytest.Pytester) -> None:
    _papers(pytester)
    chaos = pytester.path / "tests" / "chaos"
    chaos.mkdir()
    chaos.joinpath("test_c.py").write_text("import pytest\n\ndef test_one(): pass\n\n"
                                           "@pytest.mark.slow\ndef test_variant(): pass\n")
    pytester.runpytest("-p", "no:streamchaos", "tests/chaos").assert_outcomes(passed=1, deselected=1)
    pytester.runpytest("-p", "no:streamchaos", "tests/chaos", "-m", "slow").assert_outcomes(passed=1, deselected=1)
    pytester.runpytest("-p", "no:streamchaos", "-m", "not papers or slow").assert_outcomes(passed=3, deselected=1)


def test_a_papers_test_without_its_marks_is_refused(pytester: pytest.Pytester) -> None:
    _papers(pytester, "import pytest\n\n@pytest.mark.papers\ndef test_x(): pass\n")
    result = pytester.runpytest("-p", "no:streamchaos")
    result.stderr.fnmatch_lines(["*tests/papers must be marked @pytest.mark.chaos*"])
