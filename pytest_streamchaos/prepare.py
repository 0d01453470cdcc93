"""Prepare this machine for chaos runs: fetch and build once what the stack runs, so that no test waits.

- the jars of Apache Kafka, of Spark's Kafka connector (for the installed pyspark) and of Hadoop's
  HDFS and YARN, from Maven Central into the plugin's cache (:mod:`pytest_streamchaos.stack.artifacts`);
- the ``toxiproxy-server`` binary, built with ``go install`` from the Go module proxy
  (:mod:`pytest_streamchaos.stack.toxiproxy`);
- the class-data sharing archives of the driver and executor JVMs (:mod:`pytest_streamchaos.stack.cds`),
  by a training run of ``fixtures/cds/train.py``; without them the JVMs start, only slower.

Run ``python -m pytest_streamchaos.prepare`` (``./dev`` does); what is up to date is skipped, and a
second run needs no network. Each step that fails prints one line naming the fix; the exit code is the
number of failed steps.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

from pytest_streamchaos.assets import fixture_path
from pytest_streamchaos.spark import connector
from pytest_streamchaos.stack import artifacts, cds, toxiproxy
from pytest_streamchaos.stack.base import StackError
from pytest_streamchaos.stack.environment import check_spark_environment


def _cds() -> None:
    env = check_spark_environment()
    for kind in cds.KINDS:
        path = cds.archive_path(kind, str(env.java), env.spark_home, "")
        if path.is_file():
            print(f"prepare: the {kind} JVMs' class-data archive is up to date: {path}")
            continue
        t = time.monotonic()
        cds.build(kind, str(env.java), env.spark_home, fixture_path("cds", "train.py"), "")
        print(f"prepare: built the {kind} JVMs' class-data archive in {time.monotonic() - t:.0f}s: {path}")


def steps() -> dict[str, Callable[[], object]]:
    """What ``main`` does, by name, in order."""
    env = check_spark_environment
    return {
        "Apache Kafka": lambda: artifacts.resolve(artifacts.kafka_jars()),
        "Spark's Kafka connector": lambda: connector.connector_jars(env().spark_home),
        "Hadoop HDFS": lambda: artifacts.resolve(artifacts.hadoop_jars()),
        "Hadoop YARN": lambda: artifacts.resolve(artifacts.hadoop_yarn_jars()),
        "Toxiproxy": toxiproxy.toxiproxy_server_binary,
        "class-data sharing archives": _cds,
    }


def main() -> int:
    """Run every step; a failed step is reported and the others still run."""
    failed = 0
    for name, step in steps().items():
        try:
            step()
        except (StackError, RuntimeError, OSError) as exc:
            failed += 1
            print(f"prepare: {name}: {exc}", file=sys.stderr)
    return failed


if __name__ == "__main__":
    sys.exit(main())
