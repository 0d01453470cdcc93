"""Type-checked only (tests/unit/test_typecheck.py runs mypy on it, nothing imports it): the run classes fit the
protocols of analysis/run_view.py by their members -- a ``ChaosRun`` is a ``RunView`` (what the report's text
reads) and ``Bounded`` (what an SLA bounds), a ``RepeatedRun`` and its SLA view over the worst or median run are
``Bounded``. A class that stops fitting fails the type check, naming the member."""

from pytest_streamchaos.analysis.repeat import RepeatedRun
from pytest_streamchaos.analysis.result import ChaosRun
from pytest_streamchaos.analysis.run_view import Bounded, RunView


def runs_fit(run: ChaosRun, runs: RepeatedRun) -> None:
    described: RunView = run
    bounded: list[Bounded] = [run, runs, runs.view("worst"), runs.view("median")]
    del described, bounded
