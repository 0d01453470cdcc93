"""Kafka clients cached per Python process.

Creating a librdkafka client costs a connection and a metadata round trip (an idempotent or
transactional producer ~0.05-0.5 s); Spark runs ``read()`` / ``mapInArrow`` once per task, and with
``spark.python.worker.reuse=true`` (the default) the same Python worker serves many tasks. So every
helper here keeps one client per configuration per process instead of one per task.
"""

from __future__ import annotations

import atexit
import os
import threading
from collections.abc import Callable, Mapping
from typing import TypeVar

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient

_lock = threading.Lock()
_consumers: dict[tuple, Consumer] = {}
_producers: dict[tuple, Producer] = {}
_admins: dict[tuple, AdminClient] = {}
_pid = os.getpid()
#: a client kind: ``Consumer``, ``Producer`` or ``AdminClient``
C = TypeVar("C")


def _key(conf: Mapping[str, object]) -> tuple:
    return tuple(sorted((k, str(v)) for k, v in conf.items()))


def _forget_after_fork() -> None:
    # librdkafka handles do not survive fork(); a forked worker must build its own.
    global _pid
    if os.getpid() != _pid:
        _consumers.clear()
        _producers.clear()
        _admins.clear()
        _pid = os.getpid()


def consumer(conf: Mapping[str, object]) -> Consumer:
    """A cached assign()-only consumer (no group join, no offset commits)."""
    full = {
        "group.id": "streamchaos-unused",  # required by the client; never joined (we only assign())
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "enable.partition.eof": False,
        "isolation.level": "read_committed",
        # A range ends exactly at the end offset; a trailing transaction marker is only "seen" through
        # the next fetch response, so do not let the broker park empty fetches for the 500 ms default.
        "fetch.wait.max.ms": 10,
        # A start offset the broker already deleted must not silently jump to the log end: the
        # reader decides (failOnDataLoss), like Spark's Kafka source.
        "auto.offset.reset": "error",
        **conf,
    }
    return _cached(_consumers, full, Consumer)


def producer(conf: Mapping[str, object]) -> Producer:
    """A cached producer (idempotent unless the config says otherwise)."""
    full = {"enable.idempotence": True, "linger.ms": 5, **conf}
    return _cached(_producers, full, Producer)


def admin(conf: Mapping[str, object]) -> AdminClient:
    """A cached admin client (metadata and ListOffsets)."""
    return _cached(_admins, dict(conf), AdminClient)


def _cached(cache: dict[tuple, C], conf: dict, factory: Callable[[dict], C]) -> C:
    """The client for ``conf`` from ``cache``, built with ``factory(conf)`` on first use."""
    with _lock:
        _forget_after_fork()
        key = _key(conf)
        client = cache.get(key)
        if client is None:
            client = cache[key] = factory(conf)
        return client


@atexit.register
def _close_all() -> None:
    if os.getpid() != _pid:
        return
    for c in list(_consumers.values()):
        try:
            c.close()
        except Exception:
            pass
    for p in list(_producers.values()):
        try:
            p.flush(5)
        except Exception:
            pass


def consume_some(c: Consumer, max_messages: int, timeout: float) -> list:
    """Wait up to ``timeout`` for the first message, then take what is already buffered (up to
    ``max_messages``) without waiting. ``Consumer.consume(n, timeout)`` alone waits the full timeout
    unless ``n`` messages arrive, which adds its timeout to every read of a short range."""
    first = c.poll(timeout)
    if first is None:
        return []
    return [first, *c.consume(max_messages - 1, timeout=0)] if max_messages > 1 else [first]
