"""The session's object store: the ``s3`` storage's factory (its entry in
:data:`pytest_streamchaos.storages.STORAGES` names it; :meth:`~pytest_streamchaos.stack.fixtures.Stacks.service`
calls it on first use)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pytest_streamchaos.errors import StackError

if TYPE_CHECKING:
    from pytest_streamchaos.stack.fixtures import Stacks
    from pytest_streamchaos.stack.s3.store import ObjectStore


def session_service(stacks: Stacks, backend: str) -> ObjectStore:
    """SeaweedFS on 127.0.0.1, started; local backend only (a :class:`StackError` naming the fix on docker, where
    no store runs)."""
    from pytest_streamchaos.stack.s3.store import ObjectStore

    if backend == "docker":
        raise StackError("the docker backend runs no object store (its containers cannot reach the store on "
                         "127.0.0.1)")
    return stacks.start(ObjectStore(stacks.tmp.mktemp(f"s3-{backend}"), host=stacks.host,
                                    start_timeout=stacks.settings.start_timeout, progress=stacks.progress))
