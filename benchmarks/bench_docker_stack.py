"""The docker backend's stack: how long it takes to start and to tear down (issue 12).

Each round: a session network, the embedded brokers' container (3 brokers), a Spark master and two
worker containers until both workers are ALIVE; then the teardown of all of it. The local image is
built before the first round (not timed; ``image_build`` is reported separately). Run::

    python benchmarks/bench_docker_stack.py [--rounds 3]

Prints a table and writes ``benchmarks/results/docker_stack.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from pytest_streamchaos.stack.docker import engine, images
from pytest_streamchaos.stack.docker.kafka import DockerKafkaCluster
from pytest_streamchaos.stack.docker.spark import DockerSparkCluster

RESULTS = Path(__file__).parent / "results" / "docker_stack.json"


def one_round(tmp: str) -> dict[str, float]:
    t0 = time.perf_counter()
    session = engine.DockerSession(engine.connect()).open()
    t_net = time.perf_counter()
    kafka = DockerKafkaCluster(f"{tmp}/kafka", brokers=3, session=session)
    spark = DockerSparkCluster(f"{tmp}/spark", session=session, shared=(tmp,), workers=2)
    try:
        kafka.start()
        t_kafka = time.perf_counter()
        spark.start()
        t_spark = time.perf_counter()
    finally:
        t_down = time.perf_counter()
        spark.stop()
        kafka.stop()
        session.close()
        t_end = time.perf_counter()
    return {"network": t_net - t0, "kafka_start": t_kafka - t_net, "spark_start": t_spark - t_kafka,
            "stack_start": t_spark - t0, "teardown": t_end - t_down}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    t = time.perf_counter()
    images.host_runtime_image(engine.connect())
    build = time.perf_counter() - t
    rounds = []
    for _ in range(args.rounds):
        with tempfile.TemporaryDirectory(prefix="bench-docker-") as tmp:
            rounds.append({k: round(v, 3) for k, v in one_round(tmp).items()} | {"load_average": os.getloadavg()[0]})
    keys = [k for k in rounds[0] if k != "load_average"]
    median = {k: round(statistics.median(r[k] for r in rounds), 3) for k in keys}
    print(f"image build (or found): {build:.2f}s")
    print(f"{'step':14s} " + " ".join(f"round{i + 1:>3d}" for i in range(len(rounds))) + "   median")
    for k in keys:
        print(f"{k:14s} " + " ".join(f"{r[k]:8.2f}" for r in rounds) + f"   {median[k]:6.2f}")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({"image_build": round(build, 3), "rounds": rounds, "median": median}, indent=1))
    print(f"wrote {RESULTS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
