"""The YARN managers' preflight (their registry entries name it): run when every session starts, so it imports
the attaching (:mod:`.attach`, its REST client) only when ``--chaos-yarn-conf`` is given."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pytest_streamchaos.errors import StackError

if TYPE_CHECKING:
    from pytest_streamchaos.settings import Settings


def preflight(settings: Settings) -> str | None:
    """``--chaos-yarn-conf DIR`` whose ResourceManager does not answer: one line naming the fix, before anything
    starts (None: no such option, or it answers)."""
    if not settings.yarn_conf:
        return None
    from pytest_streamchaos.stack.yarn.attach import attach

    try:
        attach(settings.yarn_conf)
    except StackError as exc:
        return f"--chaos-yarn-conf: {exc}"
    return None
