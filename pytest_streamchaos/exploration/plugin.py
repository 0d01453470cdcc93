"""``@explore``'s hooks, registered as a plugin object of their own (as pytest's ``junitxml`` is): every
explored test's search checked at collection, before anything starts (the mark, the profile, the replay
token against this session's seed and checkpoint, the memory readable, the faults injectable here), and
the search run in ``pytest_pyfunc_call`` instead of the single call of the test function.
"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Callable
from typing import Any

import pytest

from pytest_streamchaos import settings as _settings
from pytest_streamchaos.exploration.item import ExploreContext, ExploreUsageError, explore_item
from pytest_streamchaos.exploration.mark import EXPLORE_KEY, ExploreError, cannot_inject
from pytest_streamchaos.exploration.memory import Memory, MemoryError_
from pytest_streamchaos.exploration.session import ExploreSession, spec_for_item, token_for
from pytest_streamchaos.report.session import EXPLORED_KEY
from pytest_streamchaos.search.token import ReplayTokenError, Setting, decode, plugin_version
from pytest_streamchaos.workload.seed import resolve_seed

#: the name the plugin object is registered under
PLUGIN_NAME = "streamchaos-explore"


class ExploreFlakyWarning(UserWarning):
    """A flaky violation of an explored test run with ``flaky='warn'``."""


class ExplorePlugin:
    """The hooks (see the module docstring). ``check(item, runs)`` is the main plugin's after-body check of
    a run's SLA marks and declared guarantee."""

    def __init__(self, config: pytest.Config, settings: _settings.Settings,
                 check: Callable[[pytest.Item, list[Any]], None]) -> None:
        self.settings = settings
        self.session = ExploreSession.from_config(config, settings)
        self.memory = Memory.for_config(config, settings.explore_db, plugin_version())
        self.check = check

    def here(self, nodeid: str) -> Setting:
        """What a replay of test ``nodeid`` runs under in this session, as far as it is known before a run."""
        return Setting(resolve_seed(nodeid, self.settings.seed), None, self.settings.checkpoint)

    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        """What each test asks of the search, checked now and kept in its stash; one line per problem."""
        errors = self._unselected_token(items)
        for item in [] if errors else items:
            try:
                spec = spec_for_item(item, self.session, self.here(item.nodeid))
            except (ExploreError, ReplayTokenError) as exc:
                errors.append(str(exc))
                continue
            if spec is None:
                continue
            errors += [f"{item.nodeid}: {why}" for why in cannot_inject(spec, self.settings.checkpoint)]
            if spec.replay is None:
                try:
                    self.memory.load(item.nodeid)
                except MemoryError_ as exc:
                    errors.append(str(exc))
            item.stash[EXPLORE_KEY] = spec
        if errors:
            raise pytest.UsageError("invalid @explore:\n  " + "\n  ".join(errors))

    def _unselected_token(self, items: list[pytest.Item]) -> list[str]:
        """A replay token that names a test not selected: refused, naming both."""
        token = self.session.replay
        if not token or not items or any(token_for(token, item.nodeid) for item in items):
            return []
        try:
            decode(token, items[0].nodeid, plugin_version())
        except ReplayTokenError as exc:
            return [str(exc)]
        return []

    @pytest.hookimpl(tryfirst=True)
    def pytest_pyfunc_call(self, pyfuncitem: pytest.Function) -> bool | None:
        """An explored test: its body runs once per schedule of the search on the warm stack instead of
        once; it fails with what the search found, or as inconclusive (docs/explore.md)."""
        spec = pyfuncitem.stash.get(EXPLORE_KEY, None)
        if spec is None:
            return None
        own = inspect.signature(pyfuncitem.obj).parameters
        funcargs = {name: value for name, value in pyfuncitem.funcargs.items() if name in own}
        context = ExploreContext(self.memory, resolve_seed(pyfuncitem.nodeid, self.settings.seed))
        try:
            explored = explore_item(pyfuncitem.nodeid, spec, pyfuncitem.obj, funcargs,
                                    lambda runs: self.check(pyfuncitem, runs), context)
        except ExploreUsageError as exc:
            pytest.fail(str(exc), pytrace=False)
        pyfuncitem.stash[EXPLORED_KEY] = explored
        harness: Any = funcargs.get("chaos")
        harness.results[:] = explored.keep  # the session's reports show the run that decided
        for flaky in explored.report.flaky if spec.flaky == "warn" else ():
            warnings.warn(ExploreFlakyWarning(f"@explore: flaky: {flaky.words()}"), stacklevel=1)
        if explored.failed:
            pytest.fail(explored.failure_text(), pytrace=False)
        return True
