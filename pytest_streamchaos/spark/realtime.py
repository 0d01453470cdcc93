"""Real-time mode (``trigger(realTime="5 seconds")``, Spark 4.1+) as the run sees it in a job's script, before
anything starts.

Real-time mode runs one long-running task per input partition for the whole trigger interval, writes each
record as soon as it is processed and commits the offsets at the end of the interval (its checkpoint
interval). What follows for a run:

- it needs Spark 4.1 or later (pyspark 3.5 has no ``realTime`` trigger);
- its sinks are Kafka, ``foreach``, console and memory (Spark's allow-list): a ``foreachBatch`` or a file sink
  is refused by Spark at the query's start;
- it needs a free core per input partition (the tasks run all at once): fewer, and the query never starts;
- a failure replays from the last committed offsets, so duplicates come from at most the last interval.

:func:`find` reads the trigger and the sink of its query from the script's syntax tree (no code is run);
:func:`refusal` is the one line that stops a run that cannot work, naming the fix. The cores a run needs
are :func:`cores_needed`.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

#: the sinks real-time mode writes to (Spark's ``RealTimeModeAllowlist``), by ``format(...)``
SINKS = ("kafka", "console", "memory")
#: sink methods of a ``writeStream`` chain that real-time mode refuses
REFUSED_METHODS = {"foreachBatch": "foreachBatch", "toTable": "a table (toTable)"}
#: the first Spark release with real-time mode
SINCE = (4, 1)
_UNITS = {"ms": 0.001, "millisecond": 0.001, "s": 1.0, "sec": 1.0, "second": 1.0, "m": 60.0, "min": 60.0,
          "minute": 60.0}


@dataclass(frozen=True)
class RealTime:
    """A ``trigger(realTime=...)`` in a job's script: its interval (the checkpoint interval) and its query's sink
    as far as the same expression shows it."""

    interval: float | None  #: seconds; None: not a literal in the script (the run reads it off the batches)
    where: str  #: ``job.py:12``
    sink: str | None  #: ``format("kafka")`` -> ``kafka``; ``foreachBatch``; None: not in the expression


def interval_seconds(text: str) -> float | None:
    """``"5 seconds"`` -> 5.0, ``"500 milliseconds"`` -> 0.5; None when it is not a duration."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-z]+?)s?\s*", text.lower())
    if m is None or m.group(2) not in _UNITS:
        return None
    return float(m.group(1)) * _UNITS[m.group(2)]


def find(script: Path) -> RealTime | None:
    """The real-time trigger of the job's query (the first one in the script), or None."""
    try:
        tree = ast.parse(script.read_text(errors="replace"))
    except (OSError, SyntaxError):
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "trigger":
            given = next((k.value for k in node.keywords if k.arg == "realTime"), None)
            if given is None:
                continue
            literal = given.value if isinstance(given, ast.Constant) and isinstance(given.value, str) else None
            seconds = interval_seconds(literal) if literal is not None else None
            line = node.func.end_lineno or node.lineno  # the line of ``.trigger(``
            return RealTime(seconds, f"{script.name}:{line}", _sink(tree, node))
    return None


def _sink(tree: ast.AST, trigger: ast.Call) -> str | None:
    """The sink of the ``writeStream`` chain the trigger is part of (the calls before and after it)."""
    chain = _outermost_chain(tree, trigger)
    for call in _calls(chain):
        name = call.func.attr if isinstance(call.func, ast.Attribute) else ""
        if name in REFUSED_METHODS:
            return name
        if name == "format" and call.args and isinstance(call.args[0], ast.Constant):
            return str(call.args[0].value).lower()
    return None


def _outermost_chain(tree: ast.AST, call: ast.Call) -> ast.AST:
    """The largest expression of method calls that contains ``call`` (``df.writeStream. ... .start()``)."""
    parents = {child: parent for parent in ast.walk(tree) for child in ast.iter_child_nodes(parent)}
    node: ast.AST = call
    while isinstance(parents.get(node), (ast.Attribute, ast.Call)):
        node = parents[node]
    return node


def _calls(expr: ast.AST) -> list[ast.Call]:
    """The method calls of a chain, innermost first."""
    out: list[ast.Call] = []
    node = expr
    while isinstance(node, (ast.Call, ast.Attribute)):
        if isinstance(node, ast.Call):
            out.append(node)
            node = node.func
        else:
            node = node.value
    return out[::-1]


def cores_needed(partitions: int) -> int:
    """Real-time mode's long-running tasks: one per input partition, all at once."""
    return partitions


def refusal(rt: RealTime, *, spark_version: str) -> str | None:
    """Why the job's real-time query cannot run here, one line naming the fix; None when it can (as far as the
    script and the installed Spark tell: the cores are :func:`cores_refusal`'s)."""
    release = tuple(int(p) for p in re.findall(r"\d+", spark_version)[:2])
    if release < SINCE:
        return (f"trigger(realTime=...) at {rt.where} is Spark's real-time mode, which needs Spark "
                f"{'.'.join(map(str, SINCE))} or later; this pyspark is {spark_version}: install pyspark 4.1+ "
                "(pip install 'pyspark==4.2.0') or give the query a processingTime trigger")
    if rt.sink in REFUSED_METHODS or (rt.sink is not None and rt.sink not in SINKS and rt.sink != "foreach"):
        what = REFUSED_METHODS.get(rt.sink, f"format({rt.sink!r}), a file sink")
        return (f"trigger(realTime=...) at {rt.where} writes to {what}, which real-time mode does not support (its "
                f"sinks: {', '.join(map(repr, SINKS))} and foreach): write with format('kafka') or foreach, or give "
                "the query a processingTime trigger")
    return None


def cores_refusal(rt: RealTime, *, partitions: int, cores: int, where: str) -> str | None:
    """One line when the cluster's ``cores`` (``where`` says whose) cannot run one task per input partition."""
    need = cores_needed(partitions)
    if cores >= need:
        return None
    return (f"trigger(realTime=...) at {rt.where}: real-time mode runs one long-running task per input partition "
            f"and needs {need} free cores for {partitions} partitions; {where} offers {cores}: give the stack more "
            f"(--chaos-workers / --chaos-worker-cores) or the input fewer partitions (Load(partitions={cores}))")


def sized(rt: RealTime, *, partitions: int, worker_cores: list[int] | None, job_conf: Mapping[str, str],
          own: Mapping[str, str]) -> tuple[dict[str, str], str | None]:
    """The conf that gives a real-time query a core per input partition, and the note that says so (None: nothing
    changed). ``worker_cores``: each alive worker's cores (None: the cluster does not say); ``job_conf``: the conf
    the job would get; ``own``: the test's. ``ValueError`` (one line naming the fix) when the cluster, or the
    job's own ``spark.cores.max``, has too few."""
    if worker_cores is not None:
        why = cores_refusal(rt, partitions=partitions, cores=sum(worker_cores),
                            where=f"the cluster ({len(worker_cores)} workers)")
        if why:
            raise ValueError(why)
    if "spark.cores.max" in own:
        why = cores_refusal(rt, partitions=partitions, cores=int(own["spark.cores.max"]),
                            where="the job's spark.cores.max")
        if why:
            raise ValueError(why)
        return {}, None
    have = int(job_conf.get("spark.cores.max", "0") or 0)
    if have >= cores_needed(partitions):
        return {}, None
    return ({"spark.cores.max": str(cores_needed(partitions))},
            f"real-time mode ({rt.where}): spark.cores.max raised from {have} to {cores_needed(partitions)}, one core "
            "per input partition")


def sized_on_yarn(rt: RealTime, *, partitions: int, job_conf: Mapping[str, str], own: Mapping[str, str]
                  ) -> tuple[dict[str, str], str | None]:
    """:func:`sized` on YARN, where a query's cores are its executors' (``spark.executor.instances`` x
    ``spark.executor.cores``; ``spark.cores.max`` is standalone's): more executors when they are too few, a
    ``ValueError`` in one line when the test's own conf fixes them too few."""
    per = int(own.get("spark.executor.cores") or job_conf.get("spark.executor.cores") or 1)
    instances = int(own.get("spark.executor.instances") or job_conf.get("spark.executor.instances") or 2)
    need = cores_needed(partitions)
    if instances * per >= need:
        return {}, None
    if "spark.executor.instances" in own:
        why = cores_refusal(rt, partitions=partitions, cores=instances * per,
                            where="the job's spark.executor.instances x spark.executor.cores")
        raise ValueError(why)
    more = -(-need // per)
    return ({"spark.executor.instances": str(more)},
            f"real-time mode ({rt.where}): spark.executor.instances raised from {instances} to {more}, one core per "
            "input partition")
