"""``python -m pytest_streamchaos.demo``: the main job of the README.

Runs the demo chaos test (``tests/chaos/test_demo.py``: the stateless enrichment pipeline on the
embedded stack, a worker killed under load) and prints its report: the verdict, the recovery metrics,
the fault timeline, and the session's chaos table. Extra arguments go to pytest (after the demo's own, so
they win: ``--chaos-kafka-brokers 3`` runs it on three Kafka nodes).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

#: the stack the demo's verdict needs and no more: one Kafka node. It faults a Spark worker, never a broker, so
#: the replicas of a three-node cluster (two more format and broker JVMs to start, and their replication all
#: run long, on a 2-core machine) would change nothing it shows (docs/measurements.md, first verdict)
DEMO_STACK = ("--chaos-kafka-brokers=1",)


def main(argv: list[str] | None = None) -> int:
    root = Path(__file__).resolve().parent.parent
    demo = root / "tests" / "chaos" / "test_demo.py"
    if not demo.is_file():
        print(f"streamchaos demo: {demo} not found; run the demo from a checkout of pytest-streamchaos "
              "(pip install -e .), e.g. ./dev demo", file=sys.stderr)
        return 2
    args = [str(demo), "-m", "chaos", "-s", "-p", "no:cacheprovider", f"--rootdir={root}",
            f"--chaos-report={root / 'chaos-report.json'}", *DEMO_STACK, *(argv if argv is not None else sys.argv[1:])]
    # pytest in this process's place, not under it: this interpreter has imported the plugin already
    # (pytest would warn that it cannot be assertion-rewritten), and a Ctrl-C then reaches pytest alone,
    # which stops the stack itself
    os.execv(sys.executable, [sys.executable, "-m", "pytest", *args])
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main())
