"""Settings of the click jobs, as a deployment keeps them beside the job: the broker, the topics, and where
the lake and the checkpoints live -- computed at run time from the environment, with a default for a
developer's machine."""

import os

BOOTSTRAP_SERVERS = "localhost:9092"
CLICKS_TOPIC = "clicks"
UNIQUE_CLICKS_TOPIC = "unique-clicks"

LAKE_ROOT = os.environ.get("CLICKS_LAKE_ROOT", "/tmp/streamchaos-test-clicks-lake-root")


def checkpoint_path(job_name: str) -> str:
    """Where ``job_name`` keeps its streaming checkpoint."""
    return os.path.join(LAKE_ROOT, "_checkpoints", job_name)
