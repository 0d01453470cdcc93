"""Several output sinks read as one: the Kafka topics, file directories and Delta tables a job writes.

An output's name says its kind (:func:`output_kind`): ``file:<path>`` a directory of files, ``delta:<path>``
a Delta Lake table, anything else a Kafka topic. :func:`collector_for` turns one entry of
``chaos.run(outputs={name: ids})`` into its collector; :class:`Outputs` gives the run one view of them all
(counts, last arrival, the merged outputs).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from pytest_streamchaos.observe.collector import Collector
from pytest_streamchaos.observe.delta_sink import DeltaSinkCollector
from pytest_streamchaos.observe.file_sink import FileSinkCollector
from pytest_streamchaos.observe.output_names import OutputKind, check_path_output, output_kind
from pytest_streamchaos.observe.storage import Place
from pytest_streamchaos.records import OutputRecords, concat_outputs


class NoIds:
    """An output whose rows carry no input ids (an aggregate, a join, a table written by MERGE): named in
    ``outputs=[...]`` as a list, its rows are compared with a reference run's, and the run's recovery comes
    from Spark's progress."""

    def __repr__(self) -> str:
        return "NO_IDS"


NO_IDS = NoIds()
#: how input ids are read from an output: "key" (the Kafka message key), a JSON field path, or a
#: callable ``(value, key) -> ids``; None: the built-in ``id`` / ``ids`` fields; :data:`NO_IDS`: none
IdSpec = str | Callable[[Any, Any], Sequence[int]] | NoIds | None


def no_ids(_value: Any, _key: object) -> list[int]:
    """The id reader of an output without ids: every row reads, none names an input."""
    return []


def key_ids(_value: bytes, key: bytes | None) -> list[int]:
    """Ids from the Kafka message key (``b"17"``, or a JSON list ``b"[1, 2]"``)."""
    if key is None:
        raise ValueError("output has no key")
    text = key.decode().strip()
    if text.startswith("["):
        import json

        return [int(i) for i in json.loads(text)]
    return [int(text)]


def collector_for(name: str, ids: IdSpec, bootstrap_servers: str, place: Place | None = None,
                  **options: Any) -> Any:
    """The collector of one output: ``file:<path>`` or ``delta:<path>`` (its ``place``: on the local disk or
    HDFS, see :class:`~.storage.RunStorage.output`) or a Kafka topic. ``options`` go to the Kafka collector
    (e.g. an aggregate oracle's fields)."""
    if isinstance(ids, NoIds):
        ids = no_ids
    kind = output_kind(name)
    if kind != OutputKind.KAFKA:
        check_path_output(name, ids)
        if place is None or ids is None:
            raise ValueError(f"outputs={{{name!r}: ...}}: where the {kind} output is was not given")
        reader = DeltaSinkCollector if kind == OutputKind.DELTA else FileSinkCollector
        return reader(place, ids, name=name, what=f"outputs[{name!r}] id reader")
    if ids == "key":  # the harness's reader: an output without a readable key is malformed
        return Collector(bootstrap_servers, [name], id_reader=key_ids, what=None, **options)
    return Collector(bootstrap_servers, [name], id_reader=ids, what=f"outputs[{name!r}] id reader", **options)


class Outputs:
    """Several collectors seen as one (the interface a run and the aimed faults use)."""

    def __init__(self, parts: list[Any]) -> None:
        self.parts = parts

    def start(self) -> Outputs:
        for p in self.parts:
            p.start()
        return self

    def stop(self, drain_timeout: float = 10.0) -> None:
        for p in self.parts:
            p.stop(drain_timeout=drain_timeout)

    @property
    def count(self) -> int:
        return sum(p.count for p in self.parts)

    @property
    def ids_seen(self) -> int:
        """Distinct ids seen (exact with one output; with several, an upper bound)."""
        return sum(p.ids_seen for p in self.parts)

    @property
    def last_arrival(self) -> float | None:
        times = [p.last_arrival for p in self.parts if p.last_arrival is not None]
        return max(times) if times else None

    @property
    def last_written(self) -> float | None:
        times = [t for p in self.parts if (t := p.last_written) is not None]
        return max(times) if times else None

    @property
    def failure(self) -> Any:
        """The first error a callable of the test raised reading an output (None: none did)."""
        return next((p.failure for p in self.parts if getattr(p, "failure", None) is not None), None)

    @property
    def errors(self) -> list[str]:
        return [e for p in self.parts for e in p.errors]

    @property
    def malformed(self) -> int:
        return sum(p.malformed for p in self.parts)

    @property
    def lost_to_retention(self) -> int:
        return sum(p.lost_to_retention for p in self.parts)

    @property
    def retention_gaps(self) -> list[dict[str, Any]]:
        return [g for p in self.parts for g in p.retention_gaps]

    @property
    def notes(self) -> list[str]:
        """One line each on how an output was read (a Delta table an earlier run had written)."""
        return [n for p in self.parts for n in getattr(p, "notes", [])]

    @property
    def transaction_markers(self) -> dict[str, int]:
        """Transaction markers seen per Kafka output partition (file sinks have none)."""
        return {k: v for p in self.parts for k, v in getattr(p, "transaction_markers", {}).items()}

    def outputs(self) -> OutputRecords:
        return concat_outputs([p.outputs() for p in self.parts])
