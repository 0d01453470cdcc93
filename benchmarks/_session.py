"""One generated pytest session for a benchmark: its test file written to a temporary folder, run in a
pytest of its own (the stack brought up once for all its cases), each case writing one JSON row to
``BENCH_OUT``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def run_session(name: str, test_text: str, cases: int,
                timeout: float = 1800) -> tuple[list[dict[str, Any]], int, float]:
    """Run ``test_text`` as ``test_<name>.py``; the rows its cases wrote, pytest's return code and the
    session's seconds. The session's output tail is printed when a case wrote no row or pytest failed."""
    with tempfile.TemporaryDirectory(prefix=f"{name.replace('_', '-')}-") as tmp:
        test = Path(tmp) / f"test_{name}.py"
        test.write_text(test_text)
        out = Path(tmp) / "rows.jsonl"
        env = {**os.environ, "BENCH_OUT": str(out), "PYTHONPATH": str(ROOT)}
        started = time.monotonic()
        p = subprocess.run([sys.executable, "-m", "pytest", str(test), "-p", "no:cacheprovider", "-q", "-s",
                            "--rootdir", tmp], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
        took = time.monotonic() - started
        rows = [json.loads(line) for line in out.read_text().splitlines()] if out.exists() else []
    if p.returncode != 0 or len(rows) != cases:
        print((p.stdout + p.stderr)[-6000:], file=sys.stderr)
    return rows, p.returncode, took
