"""tests/papers' selection rule: the full versions (``slow``) run only when ``-m`` names ``slow``; every
test there is marked ``papers`` and ``chaos``."""

from __future__ import annotations

from pathlib import Path

import pytest

CONFTEST = Path(__file__).resolve().parents[1] / "papers" / "conftest.py"
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
    d = pytester.mkdir("tests").joinpath("papers")
    d.mkdir()
    d.joinpath("conftest.py").write_text(CONFTEST.read_text())
    d.joinpath("test_p.py").write_text(tests)


def test_short_versions_run_by_default_and_full_ones_only_with_m_slow(pytester: pytest.Pytester) -> None:
    _papers(pytester)
    pytester.runpytest("-p", "no:streamchaos").assert_outcomes(passed=1, deselected=1)
    pytester.runpytest("-p", "no:streamchaos", "-m", "chaos").assert_outcomes(passed=1, deselected=1)
    pytester.runpytest("-p", "no:streamchaos", "-m", "slow").assert_outcomes(passed=1, deselected=1)
    pytester.runpytest("-p", "no:streamchaos", "-m", "papers or slow").assert_outcomes(passed=2)


def test_a_papers_test_without_its_marks_is_refused(pytester: pytest.Pytester) -> None:
    _papers(pytester, "import pytest\n\n@pytest.mark.papers\ndef test_x(): pass\n")
    result = pytester.runpytest("-p", "no:streamchaos")
    result.stderr.fnmatch_lines(["*tests/papers must be marked @pytest.mark.chaos*"])
