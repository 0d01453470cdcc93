"""Topics are what the test asked for: ``create_topic`` returns only when a fresh client sees exactly
the requested partitions (each with a leader), in fresh sessions too; a topic the broker
auto-created first is an error naming both partition counts."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_streamchaos.stack.base import StackError
from pytest_streamchaos.stack.kafka_local import LocalKafkaCluster

ROOT = str(Path(__file__).resolve().parents[2])

# One fresh cluster per round, topics created the moment it is up, checked by a fresh Producer.
FRESH_SESSIONS = r"""
import sys, tempfile
from confluent_kafka import Producer
from pytest_streamchaos.stack.kafka_local import LocalKafkaCluster

bad = []
for r in range(int(sys.argv[1])):
    k = LocalKafkaCluster(3, workdir=tempfile.mkdtemp())
    k.start()
    try:
        want = {k.create_topic(f"t{r}-{n}", partitions=n): n for n in (1, 2, 3, 5)}
        md = Producer({"bootstrap.servers": k.bootstrap_servers, "log_level": 0}).list_topics(timeout=10)
        for name, n in want.items():
            t = md.topics.get(name)
            got = None if t is None else len(t.partitions)
            leaders = None if t is None else sorted(pm.leader for pm in t.partitions.values())
            if got != n or min(leaders or [-1]) < 0:
                bad.append((r, name, n, got, leaders))
    finally:
        k.stop()
print("BAD", bad)
"""


def test_topics_have_the_asked_partitions_in_fresh_sessions(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (ROOT, os.environ.get("PYTHONPATH")) if p)}
    out = subprocess.run([sys.executable, "-c", FRESH_SESSIONS, "6"], env=env, capture_output=True, text=True,
                         timeout=240, cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "BAD []" in out.stdout, out.stdout


def test_topic_auto_created_first_is_an_error_naming_both_counts(tmp_path: Path) -> None:
    from confluent_kafka import Producer

    k = LocalKafkaCluster(3, workdir=tmp_path)
    k.start()
    try:
        # the root cause: a metadata request for a not-yet-created topic from a client that allows
        # auto-creation (a Producer's default) makes the mock create it with its default, 4 partitions
        Producer({"bootstrap.servers": k.bootstrap_servers, "log_level": 0}).list_topics("early", timeout=10)
        with pytest.raises(StackError, match=r"asked for 3 partitions .* already exists with 4 partitions"):
            k.create_topic("early", partitions=3)
        assert k.create_topic("late", partitions=3) == "late"
        assert k._topic_shape("late", 10) == (3, 3)
    finally:
        k.stop()
