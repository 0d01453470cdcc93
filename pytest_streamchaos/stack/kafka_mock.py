"""A thin ctypes binding to librdkafka's mock cluster (``rd_kafka_mock_*``).

The librdkafka that the confluent-kafka wheel bundles exports an in-memory Kafka-protocol cluster
with broker-level fault controls. This module finds that library and declares the few C
signatures the plugin uses. Nothing here talks to a real broker; the cluster lives in the calling
process (the plugin runs it inside ``kafka_broker_process``, a helper process it owns).

The mock API is experimental upstream, so every symbol is looked up once, up front, and a missing
one fails with a message naming the fix instead of a segfault later.
"""

from __future__ import annotations

import ctypes
import glob
import os
from collections.abc import Sequence

_FIX = "pip install 'confluent-kafka>=2.4' (its wheel bundles librdkafka with the mock cluster API)"

RD_KAFKA_PRODUCER = 0

#: Kafka protocol ApiKeys, for :meth:`MockCluster.push_request_errors`.
API_KEYS = {
    "Produce": 0, "Fetch": 1, "ListOffsets": 2, "Metadata": 3, "OffsetCommit": 8, "OffsetFetch": 9,
    "FindCoordinator": 10, "JoinGroup": 11, "Heartbeat": 12, "LeaveGroup": 13, "SyncGroup": 14,
    "InitProducerId": 22, "AddPartitionsToTxn": 24, "AddOffsetsToTxn": 25, "EndTxn": 26,
    "TxnOffsetCommit": 28,
}


class MockUnavailableError(RuntimeError):
    """librdkafka or its mock-cluster API cannot be found. The message names the fix."""


class MockError(RuntimeError):
    """A mock-cluster call returned a librdkafka error code."""

    def __init__(self, call: str, code: int, text: str) -> None:
        super().__init__(f"{call} failed: {text} (librdkafka error {code})")
        self.code = code


def find_librdkafka() -> str:
    """Path of the librdkafka shared library bundled in the confluent-kafka wheel.

    ``STREAMCHAOS_LIBRDKAFKA`` overrides the search (e.g. a system librdkafka built with the mock API).
    """
    override = os.environ.get("STREAMCHAOS_LIBRDKAFKA")
    if override:
        if not os.path.isfile(override):
            raise MockUnavailableError(
                f"STREAMCHAOS_LIBRDKAFKA={override!r} is not a file; unset it or fix the path")
        return override
    try:
        import confluent_kafka
    except ImportError:
        raise MockUnavailableError(f"confluent-kafka is not installed; {_FIX}") from None
    pkg_dir = os.path.dirname(os.path.abspath(confluent_kafka.__file__))
    site = os.path.dirname(pkg_dir)
    # auditwheel puts bundled libs next to the package as <name>.libs/ (Linux); macOS wheels use .dylibs/.
    patterns = [
        os.path.join(site, "confluent_kafka.libs", "librdkafka*.so*"),
        os.path.join(pkg_dir, ".dylibs", "librdkafka*.dylib"),
        os.path.join(pkg_dir, "librdkafka*.so*"),
    ]
    for pattern in patterns:
        hits = sorted(glob.glob(pattern))
        if hits:
            return hits[0]
    raise MockUnavailableError(
        f"no bundled librdkafka found next to confluent_kafka in {site} (searched {patterns}); {_FIX}, "
        "or point STREAMCHAOS_LIBRDKAFKA at a librdkafka that exports rd_kafka_mock_cluster_new"
    )


_c_int32 = ctypes.c_int32
_c_int16 = ctypes.c_int16
_vp = ctypes.c_void_p

# name -> (restype, argtypes); from librdkafka's src/rdkafka.h and src/rdkafka_mock.h.
_SIGNATURES: dict[str, tuple[object, list]] = {
    "rd_kafka_conf_new": (_vp, []),
    "rd_kafka_conf_set": (ctypes.c_int, [_vp, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p,
                                         ctypes.c_size_t]),
    "rd_kafka_new": (_vp, [ctypes.c_int, _vp, ctypes.c_char_p, ctypes.c_size_t]),
    "rd_kafka_destroy": (None, [_vp]),
    "rd_kafka_err2str": (ctypes.c_char_p, [ctypes.c_int]),
    "rd_kafka_mock_cluster_new": (_vp, [_vp, ctypes.c_int]),
    "rd_kafka_mock_cluster_destroy": (None, [_vp]),
    "rd_kafka_mock_cluster_bootstraps": (ctypes.c_char_p, [_vp]),
    "rd_kafka_mock_topic_create": (ctypes.c_int, [_vp, ctypes.c_char_p, ctypes.c_int, ctypes.c_int]),
    "rd_kafka_mock_partition_set_leader": (ctypes.c_int, [_vp, ctypes.c_char_p, _c_int32, _c_int32]),
    "rd_kafka_mock_broker_set_down": (ctypes.c_int, [_vp, _c_int32]),
    "rd_kafka_mock_broker_set_up": (ctypes.c_int, [_vp, _c_int32]),
    "rd_kafka_mock_broker_set_rtt": (ctypes.c_int, [_vp, _c_int32, ctypes.c_int]),
    "rd_kafka_mock_coordinator_set": (ctypes.c_int, [_vp, ctypes.c_char_p, ctypes.c_char_p, _c_int32]),
    # The array variant, because ctypes cannot portably call the variadic push_request_errors.
    "rd_kafka_mock_push_request_errors_array": (None, [_vp, _c_int16, ctypes.c_size_t,
                                                       ctypes.POINTER(ctypes.c_int)]),
    "rd_kafka_mock_clear_request_errors": (None, [_vp, _c_int16]),
}

# Newer than the mock API's first release (librdkafka 2.x); used only when present.
_OPTIONAL_SIGNATURES: dict[str, tuple[object, list]] = {
    "rd_kafka_mock_group_initial_rebalance_delay_ms": (None, [_vp, _c_int32]),
    "rd_kafka_mock_broker_set_host_port": (ctypes.c_int, [_vp, _c_int32, ctypes.c_char_p, ctypes.c_int]),
}

_lib: ctypes.CDLL | None = None


def load() -> ctypes.CDLL:
    """Load librdkafka once and declare every signature; raise :class:`MockUnavailableError` if any
    symbol is missing."""
    global _lib
    if _lib is not None:
        return _lib
    path = find_librdkafka()
    try:
        lib = ctypes.CDLL(path)
    except OSError as exc:
        raise MockUnavailableError(f"cannot load {path}: {exc}; {_FIX}") from None
    missing = [name for name in _SIGNATURES if not hasattr(lib, name)]
    if missing:
        raise MockUnavailableError(f"{path} lacks the mock-cluster symbols {missing}; {_FIX}")
    for name, (restype, argtypes) in {**_SIGNATURES, **_OPTIONAL_SIGNATURES}.items():
        if not hasattr(lib, name):
            continue  # only optional ones can be missing here
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes
    _lib = lib
    return lib


def err2str(code: int) -> str:
    """librdkafka's text for an error code."""
    raw = load().rd_kafka_err2str(code)
    return raw.decode() if raw else f"error {code}"


class MockCluster:
    """An in-process librdkafka mock cluster of ``brokers`` brokers with ids 1..N.

    Owns the helper ``rd_kafka_t`` that librdkafka needs for bookkeeping. Call :meth:`destroy`
    (or use it as a context manager) to close the listeners.
    """

    def __init__(self, brokers: int) -> None:
        if brokers < 1:
            raise ValueError(f"a mock cluster needs at least one broker, got {brokers}")
        self._lib = load()
        errstr = ctypes.create_string_buffer(512)
        conf = self._lib.rd_kafka_conf_new()
        # rd_kafka_new takes ownership of conf (also on failure it is ours to leak; it is tiny).
        self._rk = self._lib.rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, len(errstr))
        if not self._rk:
            raise MockError("rd_kafka_new", -1, errstr.value.decode(errors="replace"))
        self._mc = self._lib.rd_kafka_mock_cluster_new(self._rk, brokers)
        if not self._mc:
            self._lib.rd_kafka_destroy(self._rk)
            self._rk = None
            raise MockError("rd_kafka_mock_cluster_new", -1, "returned NULL (could not bind 127.0.0.1?)")
        self.broker_ids: list[int] = list(range(1, brokers + 1))
        self.bootstrap_servers: str = self._lib.rd_kafka_mock_cluster_bootstraps(self._mc).decode()

    # -- lifecycle ---------------------------------------------------------------------------

    @property
    def alive(self) -> bool:
        return self._mc is not None

    def destroy(self) -> None:
        """Close every listener and free the cluster. Idempotent."""
        if self._mc is not None:
            self._lib.rd_kafka_mock_cluster_destroy(self._mc)
            self._mc = None
        if self._rk is not None:
            self._lib.rd_kafka_destroy(self._rk)
            self._rk = None

    def __enter__(self) -> MockCluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.destroy()

    # -- controls ----------------------------------------------------------------------------

    def _cluster(self) -> int:
        if self._mc is None:
            raise MockError("mock cluster", -1, "the cluster was destroyed")
        return self._mc

    def _check(self, call: str, code: int) -> None:
        if code != 0:
            raise MockError(call, code, err2str(code))

    def _broker(self, call: str, broker_id: int) -> int:
        # Checked here so the message lists the valid ids (-1 means "all brokers" in the C API).
        if broker_id != -1 and broker_id not in self.broker_ids:
            raise MockError(call, -1, f"no broker {broker_id}; brokers are {self.broker_ids} (or -1 for all)")
        return broker_id

    def topic_create(self, name: str, partitions: int = 1, replication: int = 1) -> None:
        """Create a topic (the mock cluster has no CreateTopics handler, so this is the way)."""
        if partitions < 1 or not 1 <= replication <= len(self.broker_ids):
            raise MockError("topic_create", -1, f"need partitions >= 1 and 1 <= replication <= "
                            f"{len(self.broker_ids)}, got partitions={partitions} replication={replication}")
        code = self._lib.rd_kafka_mock_topic_create(self._cluster(), name.encode(), partitions, replication)
        self._check(f"topic_create({name!r})", code)

    def partition_set_leader(self, topic: str, partition: int, broker_id: int) -> None:
        """Move a partition's leadership (-1: leader-less). Creates the topic if it does not exist."""
        if broker_id != -1:
            self._broker("partition_set_leader", broker_id)
        code = self._lib.rd_kafka_mock_partition_set_leader(self._cluster(), topic.encode(), partition,
                                                            broker_id)
        self._check(f"partition_set_leader({topic!r}, {partition}, {broker_id})", code)

    def broker_set_down(self, broker_id: int) -> None:
        """Close the broker's connections and refuse new ones (does not move leadership)."""
        broker_id = self._broker("broker_set_down", broker_id)
        code = self._lib.rd_kafka_mock_broker_set_down(self._cluster(), broker_id)
        self._check(f"broker_set_down({broker_id})", code)

    def broker_set_up(self, broker_id: int) -> None:
        """Accept connections on the broker again."""
        broker_id = self._broker("broker_set_up", broker_id)
        code = self._lib.rd_kafka_mock_broker_set_up(self._cluster(), broker_id)
        self._check(f"broker_set_up({broker_id})", code)

    def broker_set_host_port(self, broker_id: int, host: str, port: int) -> None:
        """Advertise the broker at ``host:port`` in metadata (its listener stays where it is: a
        forwarder from there to it is the caller's job)."""
        broker_id = self._broker("broker_set_host_port", broker_id)
        fn = getattr(self._lib, "rd_kafka_mock_broker_set_host_port", None)
        if fn is None:
            raise MockUnavailableError("this librdkafka has no rd_kafka_mock_broker_set_host_port (2.6+ has); "
                                       "fix: pip install -U confluent-kafka")
        self._check(f"broker_set_host_port({broker_id}, {host}, {port})", fn(self._cluster(), broker_id,
                                                                              host.encode(), port))

    def broker_set_rtt(self, broker_id: int, rtt_ms: int) -> None:
        """Delay every response of the broker by ``rtt_ms`` (0 removes the delay)."""
        if rtt_ms < 0:
            raise MockError("broker_set_rtt", -1, f"rtt_ms must be >= 0, got {rtt_ms}")
        broker_id = self._broker("broker_set_rtt", broker_id)
        code = self._lib.rd_kafka_mock_broker_set_rtt(self._cluster(), broker_id, rtt_ms)
        self._check(f"broker_set_rtt({broker_id}, {rtt_ms})", code)

    def coordinator_set(self, key_type: str, key: str, broker_id: int) -> None:
        """Pin the group (``key_type="group"``) or transaction coordinator for ``key`` to a broker."""
        if key_type not in ("group", "transaction"):
            raise MockError("coordinator_set", -1,
                            f"key_type must be 'group' or 'transaction', got {key_type!r}")
        code = self._lib.rd_kafka_mock_coordinator_set(self._cluster(), key_type.encode(), key.encode(),
                                                       self._broker("coordinator_set", broker_id))
        self._check(f"coordinator_set({key_type!r}, {key!r}, {broker_id})", code)

    def push_request_errors(self, api_key: int, errors: Sequence[int]) -> None:
        """Make the next ``len(errors)`` requests of ``api_key`` (any broker) fail with these codes."""
        arr = (ctypes.c_int * len(errors))(*errors)
        self._lib.rd_kafka_mock_push_request_errors_array(self._cluster(), api_key, len(errors), arr)

    def set_group_initial_rebalance_delay(self, delay_ms: int) -> None:
        """The brokers' ``group.initial.rebalance.delay.ms`` (the mock's default is Kafka's 3000 ms)."""
        fn = getattr(self._lib, "rd_kafka_mock_group_initial_rebalance_delay_ms", None)
        if fn is None:
            raise MockUnavailableError(f"this librdkafka has no group rebalance delay control; {_FIX}")
        fn(self._cluster(), delay_ms)

    def clear_request_errors(self, api_key: int) -> None:
        """Drop the pending injected errors of ``api_key``."""
        self._lib.rd_kafka_mock_clear_request_errors(self._cluster(), api_key)
