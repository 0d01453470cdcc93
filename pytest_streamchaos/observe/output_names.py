"""What an output's name says (``chaos.run(outputs={name: ids})``): its kind and path, checked before
anything starts. Light: imported where a run's arguments are checked, before any client is loaded."""

from __future__ import annotations

import difflib

from pytest_streamchaos.events import StrEnum


class OutputKind(StrEnum):
    """What an output's name says it is: a Kafka topic, or (``<kind>:<path>``) a directory of files or a Delta
    table."""

    KAFKA = "kafka"
    FILE = "file"
    DELTA = "delta"


#: the kinds of output that are a path (their name: ``<kind>:<path>``); any other name is a Kafka topic
PATH_KINDS = (OutputKind.FILE, OutputKind.DELTA)


def output_kind(name: str) -> OutputKind:
    """The kind of an output's name: ``file:`` / ``delta:`` and a path, else a Kafka topic."""
    kind, sep, _ = name.partition(":")
    return OutputKind(kind) if sep and kind in PATH_KINDS else OutputKind.KAFKA


def output_path(name: str) -> str | None:
    """The path of a ``file:`` or ``delta:`` output as the test wrote it; None for a Kafka topic."""
    return None if output_kind(name) == OutputKind.KAFKA else name.split(":", 1)[1]


def check_output_name(name: object) -> None:
    """An output's name is a Kafka topic or ``file:`` / ``delta:`` and a path: a ``<word>:`` that is neither (a
    misspelt kind, which would be taken for a topic that cannot exist) is a ValueError naming the kinds."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"outputs={{{name!r}: ...}}: an output's name is a Kafka topic, or 'file:<path>' / "
                         "'delta:<path>'")
    kind, sep, _ = name.partition(":")
    if sep and output_kind(name) == OutputKind.KAFKA:
        close = difflib.get_close_matches(kind, PATH_KINDS, n=1)
        hint = f"did you mean '{close[0]}:'? " if close else ""
        raise ValueError(f"outputs={{{name!r}: ...}}: {kind + ':'!r} is not a kind of output ({hint}the kinds: "
                         f"{', '.join(k + ':' for k in PATH_KINDS)}; a Kafka topic's name has no ':')")


def check_path_output(name: str, ids: object) -> None:
    """A ``file:`` / ``delta:`` output needs a path and says how its rows name their input ids (or that they
    name none, ``NO_IDS``): ValueError naming the fix otherwise (before anything starts)."""
    kind, path = output_kind(name), output_path(name)
    what = "the files" if kind == OutputKind.FILE else "the table's rows"
    if not path:
        raise ValueError(f"outputs={{{name!r}: ...}}: give the path after '{kind}:' (absolute, or relative to the "
                         "driver's working directory)")
    if ids is None:
        raise ValueError(f"outputs={{{name!r}: ...}}: say how to read input ids from {what} (a column or field path "
                         "such as 'InvoiceNumber', or a callable (row, None) -> ids)")
    if kind == OutputKind.DELTA:
        try:
            import deltalake  # noqa: F401
        except ImportError:
            raise ValueError(f"outputs={{{name!r}: ...}}: reading a Delta table needs the deltalake package: "
                             "pip install 'pytest-streamchaos[delta]'") from None


def check_relative_output(name: str, *, deploy_mode: str, on_host: bool) -> None:
    """A relative ``file:`` / ``delta:`` path in YARN's cluster mode with the job's paths on this host's disk
    (``on_host``) is under the ApplicationMaster container's working directory, which each attempt gets anew and
    YARN deletes: ValueError naming the fix, before anything starts (the other runtimes' drivers run in the
    job's own directory, where the run reads it)."""
    path = output_path(name)
    if path is None or deploy_mode != "cluster" or not on_host or path.startswith("/") or "://" in path:
        return
    if path.startswith("file:") and path[len("file:"):].startswith("/"):
        return
    raise ValueError(f"outputs={{{name!r}: ...}}: a relative path in YARN's cluster mode is under the "
                     "ApplicationMaster container's working directory, which each attempt gets anew and YARN deletes "
                     "when it ends: give it as an absolute path, or run with JobSetup(checkpoint='hdfs') (relative "
                     "paths in the run user's HDFS home)")
