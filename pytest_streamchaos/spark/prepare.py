"""Prepare this machine for fast chaos runs: build what Spark's JVMs use, once.

- the ``format("kafka")`` shim jar (:mod:`.kafka_shim`; otherwise built by the first run that needs it);
- the class-data sharing archives of the driver and executor JVMs (:mod:`pytest_streamchaos.stack.cds`),
  by a training run of ``fixtures/cds/train.py``; without them the JVMs start, only slower.

Run ``python -m pytest_streamchaos.spark.prepare`` (``./dev`` does); what is up to date is skipped.
"""

from __future__ import annotations

import sys
import time

from pytest_streamchaos.assets import fixture_path
from pytest_streamchaos.spark.kafka_shim import kafka_shim_jar
from pytest_streamchaos.stack import cds
from pytest_streamchaos.stack.environment import check_spark_environment


def main() -> int:
    """Build the shim jar and the CDS archives that are missing; print what was done."""
    env = check_spark_environment()
    java = str(env.java)
    # the driver's class path starts with the shim (the launcher appends it to extraClassPath)
    extras = {"driver": str(kafka_shim_jar()), "executor": ""}
    for kind in cds.KINDS:
        path = cds.archive_path(kind, java, env.spark_home, extras[kind])
        if path.is_file():
            print(f"cds: {kind} archive up to date: {path}")
            continue
        t = time.monotonic()
        cds.build(kind, java, env.spark_home, fixture_path("cds", "train.py"), extras[kind])
        print(f"cds: built the {kind} archive in {time.monotonic() - t:.0f}s: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
