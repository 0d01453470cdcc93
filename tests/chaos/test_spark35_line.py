"""One chaos test on the Spark 3.5 line in the default run (issue 48): the plugin says it runs on Spark 3.5 and
4.x, so CI proves both, not only the line ``./dev`` installs.

A virtual environment with pyspark 3.5.7 (and what its Arrow paths need: numpy 1.x, pyarrow < 18, pandas < 2.3)
and this checkout installed editable, made once per machine in the cache (about 2 minutes, mostly pyspark's
download); in it, the stack is prepared for its line (Spark's Kafka connector for Scala 2.12 from Maven Central),
and ``tests/chaos/test_chaos_spark_lines.py`` runs as a session of its own: a public job that pins the 3.5
connector in its code, unchanged, under a worker kill, nothing lost, on the 3.5 line's own connector.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import tempfile
from pathlib import Path

import pytest
from venvs import cached_venv, run, user_env

ROOT = Path(__file__).resolve().parents[2]
SPARK35 = ("pyspark==3.5.7", "numpy<2", "pyarrow<18", "pandas<2.3")


def spark35_python() -> Path:
    """The 3.5 venv's Python: the pins and this checkout installed editable, kept per pyproject.toml and checkout."""
    key = hashlib.sha256(f"{ROOT}\n{(ROOT / 'pyproject.toml').read_bytes()!r}\n{SPARK35}".encode()).hexdigest()[:12]
    return cached_venv(f"spark-3.5.7-{key}", *SPARK35, "-e", str(ROOT))


@pytest.mark.chaos(backend="local")
def test_a_public_job_on_the_spark35_line_survives_a_worker_kill():
    python = spark35_python()
    env = user_env(python.parent.parent)
    version = run([str(python), "-c", "import pyspark; print(pyspark.__version__)"], 60, env=env).stdout.strip()
    assert version == "3.5.7"
    run([str(python), "-m", "pytest_streamchaos.prepare", "--for", "demo"], 900, cwd=ROOT, env=env)
    with tempfile.TemporaryDirectory(prefix="streamchaos-spark35-") as tmp:
        report = Path(tmp) / "report.json"
        session = subprocess.run(
            [str(python), "-m", "pytest", "-m", "slow", "-p", "no:cacheprovider", "-rA", "--chaos-kafka-brokers=1",
             f"--chaos-report={report}", f"--basetemp={tmp}/bt", "tests/chaos/test_chaos_spark_lines.py"],
            capture_output=True, text=True, timeout=1200, cwd=ROOT, env=env)
        print(session.stdout[-3000:])
        assert session.returncode == 0, session.stdout[-6000:] + session.stderr[-3000:]
        assert re.search(r"\b1 passed\b", session.stdout)
        [doc] = json.loads(report.read_text())
    assert doc["sent"] > 1000 and doc["lost"] == 0 and doc["incorrect"] == 0
    # the run's job ran on the 3.5 line's own connector (Scala 2.12), which the launcher gave it
    assert "spark-sql-kafka-0-10_2.12-3.5.7.jar" in doc["meta"]["spark_conf"]["spark.jars"]
