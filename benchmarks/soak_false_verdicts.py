"""Soak: faulted runs of correct jobs, counting false verdicts and leaks (issue 9).

Each run is a correct job under one fault; a correct job must get 0 lost, 0 incorrect, and (with the
exactly-once job) 0 duplicates. Any other verdict is a false alarm. After the session, the machine
is checked for leaks: processes of the session, iptables rules of ours, qdiscs on ``lo``, job groups.

Scenarios (cycled until ``--runs``): worker / executor / driver kill, broker kill (it takes the broker
from everyone), a partition of the job from Kafka, a delay on the Kafka link; on the at-least-once
(Kafka sink, replays allowed) and the exactly-once job. Run::

    python benchmarks/soak_false_verdicts.py [--runs 20]

Prints one line per run and the totals, and writes ``benchmarks/results/soak.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).parent / "results" / "soak.json"

FAULTS = [
    "kill_worker(after=8, restart_after=5)",
    "kill_executor(after=8)",
    "kill_driver(after=8)",
    "kill_broker(after=8, restart_after=6)",
    'network_partition(target="kafka", after=8, duration=6)',
    'network_delay(ms=200, target="kafka", above_timeout=False, after=8, duration=8)',
]
JOBS = [("enrich_at_least_once.py", "at-least-once"), ("enrich_exactly_once.py", "exactly-once")]

TEST = textwrap.dedent('''
    import json, os
    import pytest
    from pytest_streamchaos import (kill_broker, kill_driver, kill_executor, kill_worker, network_delay,
                                    network_partition)

    CASES = json.loads(os.environ["SOAK_CASES"])

    def _one(chaos, case):
        run = chaos.run(os.path.join({root!r}, "pipelines", case["job"]), rate=100, duration=30,
                        guarantee=case["guarantee"])
        false = []
        if run.lost:
            false.append(f"lost {{run.lost}}")
        if run.incorrect:
            false.append(f"incorrect {{run.incorrect}}")
        if case["guarantee"] == "exactly-once" and run.duplicates:
            false.append(f"duplicates {{run.duplicates}}")
        row = {{**case, "sent": run.sent, "lost": run.lost, "duplicates": run.duplicates,
               "incorrect": run.incorrect, "delivered": run.guarantee_delivered,
               "fault_errors": run.fault_errors, "false_verdicts": false,
               "observer": (run.observer or {{}}).get("disturbed")}}
        with open(os.environ["SOAK_OUT"], "a") as f:
            f.write(json.dumps(row) + "\\n")
        return run

    {tests}
''')


def _test_source(cases: list[dict]) -> str:
    tests = []
    for i, c in enumerate(cases):
        tests.append(textwrap.dedent(f'''
            @pytest.mark.chaos
            @pytest.mark.sla(guarantee=None)
            @{c["fault"]}
            def test_soak_{i}(chaos):
                _one(chaos, CASES[{i}])
        '''))
    return "\n".join(tests)


def _leaks(before_pids: set[int]) -> dict:
    """What the session left: iptables chains of ours, qdiscs on lo, job groups."""
    ipt = subprocess.run(["iptables-save"], capture_output=True, text=True).stdout
    qd = subprocess.run(["tc", "qdisc", "show", "dev", "lo"], capture_output=True, text=True).stdout
    groups = []
    for root in ("/sys/fs/cgroup/unified", "/sys/fs/cgroup"):
        if os.path.isdir(root):
            groups += [d for d in os.listdir(root) if d.startswith("streamchaos-")]
    return {"iptables": [line for line in ipt.splitlines() if "STREAMCHAOS" in line or "SC-JOB" in line],
            "qdiscs": [line for line in qd.splitlines() if "noqueue" not in line],
            "job_groups": groups}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=20)
    args = ap.parse_args()
    combos = [{"fault": f, "job": j, "guarantee": g} for f in FAULTS for j, g in JOBS]
    cases = [combos[i % len(combos)] for i in range(args.runs)]
    with tempfile.TemporaryDirectory(prefix="soak-") as tmp:
        test = Path(tmp) / "test_soak.py"
        test.write_text(TEST.format(root=str(ROOT), tests=_test_source(cases)))
        out = Path(tmp) / "rows.jsonl"
        env = {**os.environ, "SOAK_CASES": json.dumps(cases), "SOAK_OUT": str(out)}
        p = subprocess.run([sys.executable, "-m", "pytest", str(test), "-q", "-p", "no:cacheprovider",
                            "--rootdir", tmp], cwd=tmp, env=env)
        rows = [json.loads(line) for line in out.read_text().splitlines()] if out.exists() else []
    leaks = _leaks(set())
    false = [r for r in rows if r["false_verdicts"]]
    for r in rows:
        print(f"{r['fault']:75s} {r['job']:26s} sent {r['sent']:6d} lost {r['lost']} dup {r['duplicates']} "
              f"{'FALSE: ' + ', '.join(r['false_verdicts']) if r['false_verdicts'] else 'ok'}")
    summary = {"runs": len(rows), "planned": len(cases), "false_verdicts": len(false),
               "leaks": leaks, "leaked": any(leaks.values()), "pytest_exit": p.returncode}
    print(json.dumps(summary))
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({"summary": summary, "runs": rows}, indent=1))
    return 0 if not false and not summary["leaked"] and len(rows) == len(cases) else 1


if __name__ == "__main__":
    sys.exit(main())
