"""What the papers' tests share: the public-style job they run, and one greppable line per measured
number (``PAPER <id> <label>: name=value ...``, shown with ``pytest -s``), the source of docs/papers.md."""

import math
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from pytest_streamchaos import JobSetup, Watch

#: Kafka to Kafka, written without this plugin (format("kafka"), Spark's defaults, argv wiring); the
#: output's Kafka key is the input id. Reused from the chaos examples.
LEDGER = str(Path(__file__).resolve().parent.parent / "chaos" / "jobs" / "orders_to_ledger.py")
LEDGER_ARGS = ["{bootstrap_servers}", "{input_topic}", "{output_topic}", "{checkpoint_dir}", "all"]
#: the same job, noticing a slow broker in 1.5 s (kafka.request.timeout.ms): PD>TO fits in a test
FAST_TIMEOUTS = str(Path(__file__).resolve().parent.parent / "chaos" / "jobs" / "payments_fast_timeouts.py")
FAST_ARGS = LEDGER_ARGS[:4]


def key_id(_value: bytes, key: bytes | None) -> list[int]:
    """The ledger's input id: its output record's Kafka key."""
    return [int(key)] if key else []


def ledger(chaos: Any, **kwargs: Any) -> Any:
    """``chaos.run`` of the ledger job (at-least-once, acks=all) with ``kwargs`` (its ``setup`` and
    ``watch`` groups completed with the job's args and id reader)."""
    kwargs.setdefault("guarantee", "at-least-once")
    setup = replace(kwargs.pop("setup", None) or JobSetup(), args=LEDGER_ARGS)
    watch = replace(kwargs.pop("watch", None) or Watch(), id_reader=key_id)
    return chaos.run(LEDGER, setup=setup, watch=watch, **kwargs)


def paper_line(paper: str, label: str, **numbers: Any) -> str:
    """Print (and return) one measured row: ``PAPER 000 worker kill: downtime=1.20 ...``."""
    def fmt(v: Any) -> str:
        if isinstance(v, float):
            return "nan" if math.isnan(v) else f"{v:.2f}"
        return str(v)
    line = f"PAPER {paper} {label}: " + " ".join(f"{k}={fmt(v)}" for k, v in numbers.items())
    print(line)
    return line


def checkpoint_write_ms(run: Any) -> float:
    """Median time a micro-batch spent writing its checkpoint, in ms: Spark's own ``walCommit`` (the
    offset log entry, before the batch) plus ``commitOffsets`` (the commit entry, after it), from the
    query's progress. Spark stamps both around the synchronous write, so the storage's cost is measured
    directly rather than through end-to-end latency, which the shared machine's noise swamps."""
    per_batch = [(b.get("durationMs") or {}) for b in run.trace.batches if (b.get("numInputRows") or 0) > 0]
    writes = [d["walCommit"] + d.get("commitOffsets", 0) for d in per_batch if "walCommit" in d]
    return float(np.median(writes)) if writes else math.nan


def fault_numbers(run: Any, f: Any) -> dict[str, Any]:
    """The per-fault numbers every paper's table uses."""
    return {"verdict": f.verdict, "downtime": f.downtime, "output_gap": f.output_gap,
            "catch_up": f.catch_up if f.catch_up is not None else math.nan,
            "recovery": float(f.recovery_time) if f.recovery_time is not None else math.nan,
            "peak_latency": f.peak_latency, "failure_cost": f.failure_cost if f.failure_cost is not None else math.nan,
            "baseline_p99": run.latency.baseline_p99, "reaction": f.system_detection_event}
