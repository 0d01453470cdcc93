"""Recovery on YARN beside Spark standalone, in one run: the same Kafka-to-Kafka job
(``tests/chaos/jobs/orders_to_shipments.py``, unchanged: ``format("kafka")``, ``localhost:9092``, its
checkpoint an absolute path), 100 records/s for a fixed 60 s, at-least-once, under

- YARN, client mode: ``@kill_executor`` (its container signalled through the RM's REST API);
- YARN, cluster mode: ``@kill_driver`` (the ApplicationMaster's container; YARN's second attempt recovers);
- standalone: ``@kill_executor`` (SIGKILL of the executor's JVM);
- standalone: ``@kill_driver`` with ``JobSetup(supervise=True)`` (the driver restarted from the checkpoint).

One pytest session runs the four (one Kafka, the mini YARN and the standalone cluster each started once).
Prints one row per run (lost, duplicates, downtime, recovery, failure cost) and writes
``benchmarks/results/yarn_recovery.json``. Run it under the heavy lock (about 10 minutes):

    flock /tmp/sc/heavy.lock python benchmarks/bench_yarn_recovery.py
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from _session import run_session  # benchmarks/_session.py (run as python benchmarks/<name>.py)

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results" / "yarn_recovery.json"
JOB = ROOT / "tests" / "chaos" / "jobs" / "orders_to_shipments.py"

#: (manager, fault, deploy mode, the mark, supervise)
CASES = [
    ("yarn", "kill_executor", "client", "kill_executor(after=8)", False),
    ("yarn", "kill_driver (AM)", "cluster", "kill_driver(after=8)", False),
    ("standalone", "kill_executor", "client", "kill_executor(after=8)", False),
    ("standalone", "kill_driver", "client", "kill_driver(after=8)", True),
]

TEST = '''
import json, os
import pytest
from pytest_streamchaos import NOT_RECOVERED, JobSetup, Load, Watch, kill_driver, kill_executor


def _one(chaos, manager, fault, mode, supervise):
    run = chaos.run(%(job)r, guarantee="at-least-once",
                    setup=JobSetup(args=["{checkpoint_dir}"], kafka_port=9092, deploy_mode=mode, supervise=supervise),
                    load=Load(rate=100, duration=60, inputs={"orders": None}), watch=Watch(outputs={"shipments": None}))
    print(run.describe())
    rec = run.recovery_time
    row = {"manager": manager, "fault": fault, "deploy_mode": mode, "sent": run.sent, "lost": run.lost,
           "duplicates": run.duplicates, "downtime_s": round(run.downtime, 1),
           "recovery_s": None if rec is None or rec is NOT_RECOVERED else round(float(rec), 1),
           "failure_cost_s": None if run.failure_cost is None else round(run.failure_cost, 1),
           "delivered": run.guarantee_delivered, "fault_errors": run.fault_errors,
           "driver_launches": run.driver_launches,
           "yarn_attempts": sum(1 for e in run.timeline if e.kind == "yarn_attempt_started")}
    with open(os.environ["BENCH_OUT"], "a") as f:
        f.write(json.dumps(row) + "\\n")
%(tests)s
'''

ONE = '''

@pytest.mark.chaos(spark=%(manager)r)
@pytest.mark.sla(guarantee=None)
@%(mark)s
def test_%(i)d(chaos):
    _one(chaos, %(manager)r, %(fault)r, %(mode)r, %(supervise)r)
'''


def main() -> int:
    tests = "".join(ONE % {"i": i, "manager": m, "fault": f, "mode": d, "mark": mark, "supervise": s}
                    for i, (m, f, d, mark, s) in enumerate(CASES))
    rows, returncode, took = run_session("bench_yarn_recovery", TEST % {"job": str(JOB), "tests": tests}, len(CASES))
    print(f"{'manager':<11} {'fault':<17} {'mode':<8} {'sent':>5} {'lost':>4} {'dup':>4} {'down s':>7} "
          f"{'recov s':>8} {'cost s':>7} attempts/launches")
    for r in rows:
        print(f"{r['manager']:<11} {r['fault']:<17} {r['deploy_mode']:<8} {r['sent']:>5} {r['lost']:>4} "
              f"{r['duplicates']:>4} {r['downtime_s']:>7} {str(r['recovery_s']):>8} {str(r['failure_cost_s']):>7} "
              f"{r['yarn_attempts']}/{r['driver_launches']}")
    result = {"date": time.strftime("%Y-%m-%d"), "session_s": round(took), "rate": 100, "duration_s": 60,
              "job": str(JOB.relative_to(ROOT)), "rows": rows, "pytest_returncode": returncode}
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    return 0 if returncode == 0 and len(rows) == len(CASES) else 1


if __name__ == "__main__":
    sys.exit(main())
