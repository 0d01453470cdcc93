"""The one base of everything the stack runs (testcontainers' ``DockerContainer``): ``start`` and ``stop``,
and ``with`` for both, written once. A cluster, a server, a watcher is a :class:`Service`; what differs is
how it starts and stops, and how it is awaited (:mod:`pytest_streamchaos.poll`)."""

from __future__ import annotations

import abc
from typing import TypeVar

S = TypeVar("S", bound="Service")


class Service(abc.ABC):
    """Something the stack starts and stops; ``with service:`` starts it and stops it on every exit path."""

    @abc.abstractmethod
    def start(self) -> object:
        """Start it (and wait until it serves); nothing when it runs already."""

    @abc.abstractmethod
    def stop(self) -> None:
        """Stop everything it started. Idempotent."""

    def __enter__(self: S) -> S:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
