"""Faults through YARN's own API: what a client of the ResourceManager may do to a running application,
with no SSH and no root on the nodes, so the same on the mini cluster and on a cluster the plugin did
not start.

- an executor's container signalled (``FORCEFUL_SHUTDOWN``: SIGKILL to its process group; the Spark
  driver asks YARN for a replacement),
- the ApplicationMaster's container signalled: in cluster deploy mode the AM is the driver, and YARN's
  re-attempt (``spark.yarn.maxAppAttempts``) is the recovery; in client mode the AM only negotiates
  containers for a driver that runs elsewhere.

The loss of a whole NodeManager and an RM restart need the daemons' processes: they are the local
cluster's (:class:`~.cluster.LocalYarnCluster`); on an attached cluster the stack's YARN backend
(:mod:`.spark`) refuses them in one line.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from pytest_streamchaos.poll import poll
from pytest_streamchaos.stack.base import StackError
from pytest_streamchaos.stack.yarn.rest import AppAttempt, ResourceManagerApi, YarnApiError, YarnContainer


@dataclass(frozen=True)
class ContainerKill:
    """One signalled container: which, and when YARN accepted the request and when it was gone."""

    container: YarnContainer
    requested_at: float  #: ``time.time()`` when the RM accepted the signal request
    gone_at: float | None = None  #: when the RM no longer listed it running (None: not waited for)


class YarnAppFaults:
    """API faults on one application (``app_id``) of the YARN behind ``api``."""

    def __init__(self, api: ResourceManagerApi, app_id: str) -> None:
        self.api, self.app_id = api, app_id

    def attempt(self) -> AppAttempt:
        """The application's current (latest) attempt."""
        attempts = self.api.attempts(self.app_id)
        if not attempts:
            raise StackError(f"YARN application {self.app_id} has no attempt yet")
        return attempts[-1]

    def running_containers(self) -> list[YarnContainer]:
        """The current attempt's running containers, the AM's first."""
        att = self.attempt()
        found = self.api.containers(self.app_id, att.attempt_id)
        return sorted(found, key=lambda c: (c.id != att.am_container_id, c.number))

    def executor_containers(self) -> list[YarnContainer]:
        """The running containers of the current attempt other than the ApplicationMaster's."""
        att = self.attempt()
        return [c for c in self.running_containers() if c.id != att.am_container_id]

    def wait_executors(self, n: int, timeout: float) -> list[YarnContainer]:
        """Wait until the current attempt runs at least ``n`` executor containers."""
        seen: list[list[YarnContainer]] = [[]]

        def enough() -> list[YarnContainer] | None:
            try:
                seen[0] = self.executor_containers()
            except (YarnApiError, StackError):
                return None
            return seen[0] if len(seen[0]) >= n else None

        running = poll(enough, timeout, lambda _: StackError(
            f"YARN application {self.app_id}: {len(seen[0])} executor containers running after {timeout:.0f}s, "
            f"waited for {n}: {[c.id for c in seen[0]]}"), interval=0.25)
        assert running is not None  # poll returns only a truthy value
        return running

    def kill_container(self, container: YarnContainer, *, graceful: bool = False, wait: float = 30.0) -> ContainerKill:
        """Signal ``container`` through the RM (SIGKILL, or SIGTERM with ``graceful``) and, unless ``wait``
        is 0, wait until the RM no longer lists it running."""
        self.api.signal_container(container.id, "GRACEFUL_SHUTDOWN" if graceful else "FORCEFUL_SHUTDOWN")
        requested = time.time()
        if not wait:
            return ContainerKill(container, requested)

        def gone() -> float | None:
            try:
                running = {c.id for c in self.api.containers(container.app_id, container.attempt_id)}
            except YarnApiError:
                return None
            return None if container.id in running else time.time()

        gone_at = poll(gone, wait, lambda _: StackError(
            f"YARN container {container.id} still running {wait:.0f}s after YARN accepted the signal"), interval=0.1)
        return ContainerKill(container, requested, gone_at)

    def kill_executor(self, index: int = 0, *, graceful: bool = False, wait: float = 30.0) -> ContainerKill:
        """Signal the ``index``-th executor container (by container number) of the current attempt."""
        execs = self.executor_containers()
        if not 0 <= index < len(execs):
            raise StackError(f"YARN application {self.app_id} runs {len(execs)} executor containers; no index {index}")
        return self.kill_container(execs[index], graceful=graceful, wait=wait)

    def kill_am(self, *, wait: float = 60.0) -> tuple[ContainerKill, AppAttempt | None]:
        """Signal the ApplicationMaster's container (SIGKILL) and, unless ``wait`` is 0, wait until YARN
        started the next attempt; the kill and that attempt (None when the application had no attempt
        left and failed)."""
        before = self.attempt()
        am = YarnContainer(before.am_container_id, before.node_id, "RUNNING")
        kill = self.kill_container(am, wait=0)
        if not wait:
            return kill, None

        def next_attempt() -> AppAttempt | str | None:
            app = self.api.app(self.app_id)
            attempts = self.api.attempts(self.app_id)
            if attempts and attempts[-1].number > before.number:
                return attempts[-1]
            return "no attempt left" if not app.live else None

        found = poll(next_attempt, wait, lambda _: StackError(
            f"YARN application {self.app_id}: no attempt after {before.attempt_id} within {wait:.0f}s of the AM's "
            "kill"), interval=0.2)
        return kill, found if isinstance(found, AppAttempt) else None
