"""Outputs estimated from Spark's query progress, for jobs whose output cannot be read.

A job that writes to the console, to ``noop`` or to an external system gives the collector nothing
to read. Spark's own progress still says, per micro-batch, how many input rows it processed and when
the batch ended. Assuming the rows of each topic are consumed in the order they were sent (true per
partition, approximately across partitions), batch ``k`` processed the sent records with ranks
``C[k-1] .. C[k]-1`` (``C``: cumulative ``numInputRows``), and their "outputs" became visible when the
batch ended. That gives throughput per second exactly and latency approximately -- enough for
downtime, recovery time and failure cost -- but says nothing about which records were lost or
duplicated: a run built this way has no per-record verdict (``ChaosRun.resolution == "none"``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .trace import OutputRecords, SentRecords


def outputs_from_progress(sent: SentRecords, batches: list[dict[str, Any]], inputs: int = 1) -> OutputRecords:
    """Estimated outputs (see the module docstring). ``inputs``: how many topics carry each id (a
    join reads every id once per topic, so it processes ``inputs`` rows per id)."""
    order = np.argsort(sent.send_ts, kind="stable")
    ids = sent.ids[order]
    arrival: list[float] = []
    rows: list[np.ndarray] = []
    done = 0.0
    for b in sorted(batches, key=lambda b: b.get("t_end", 0.0)):
        n = (b.get("numInputRows") or 0) / max(inputs, 1)
        if n <= 0:
            continue
        lo, hi = int(round(done)), min(int(round(done + n)), ids.shape[0])
        done += n
        if hi > lo:
            rows.append(ids[lo:hi])
            arrival.extend([float(b["t_end"])] * (hi - lo))
    flat = np.concatenate(rows) if rows else np.zeros(0, np.int64)
    return OutputRecords(arrival_ts=np.asarray(arrival, np.float64),
                         offsets=np.arange(flat.shape[0] + 1, dtype=np.int64), ids=flat.astype(np.int64))
