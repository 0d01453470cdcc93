"""The contract between the launcher and a user's job: a handful of environment variables.

pytest-streamchaos starts every job with these set. A job written for the plugin calls
:func:`job_config` instead of hard-coding a broker address, topic or checkpoint path; a job written
without it (hard-coded names, argv) ignores them -- ``chaos.run(inputs=, outputs=, setup=JobSetup(args=))`` wires it
instead (docs/job-contract.md). :meth:`JobConfig.to_env` is the inverse, used by the launcher (and by
anyone running a job by hand).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

ENV_BOOTSTRAP_SERVERS = "STREAMCHAOS_BOOTSTRAP_SERVERS"
ENV_INPUT_TOPIC = "STREAMCHAOS_INPUT_TOPIC"
ENV_OUTPUT_TOPIC = "STREAMCHAOS_OUTPUT_TOPIC"
ENV_CHECKPOINT_DIR = "STREAMCHAOS_CHECKPOINT_DIR"
ENV_TRIGGER_SECONDS = "STREAMCHAOS_TRIGGER_SECONDS"
# Optional extras.
ENV_INPUT_TOPICS = "STREAMCHAOS_INPUT_TOPICS"  #: comma-separated, for jobs with several inputs
ENV_SIDE_TOPIC = "STREAMCHAOS_SIDE_TOPIC"  #: e.g. where a job sends late events
ENV_MAX_ROWS_PER_TRIGGER = "STREAMCHAOS_MAX_ROWS_PER_TRIGGER"
ENV_TRANSACTIONAL_ID = "STREAMCHAOS_TRANSACTIONAL_ID"  #: stable id for the exactly-once sink

REQUIRED = (ENV_BOOTSTRAP_SERVERS, ENV_INPUT_TOPIC, ENV_OUTPUT_TOPIC, ENV_CHECKPOINT_DIR, ENV_TRIGGER_SECONDS)


class JobConfigError(RuntimeError):
    """The job's environment is missing or has a bad variable; the message says which and how to fix."""


def _hint() -> str:
    example = " ".join(f"{k}=..." for k in REQUIRED)
    return (
        "This job is meant to be launched by pytest-streamchaos (chaos.run(...)), which sets these "
        f"variables. To run it by hand, set them yourself, e.g.: {example} python job.py"
    )


@dataclass(frozen=True)
class JobConfig:
    """Where the job reads, writes and checkpoints, and how often it triggers."""

    bootstrap_servers: str
    input_topic: str
    output_topic: str
    checkpoint_dir: str
    trigger_seconds: float
    input_topics: tuple[str, ...] = field(default=())  #: all inputs; ``(input_topic,)`` if not set
    side_topic: str | None = None
    max_rows_per_trigger: int | None = None
    transactional_id: str | None = None

    def __post_init__(self) -> None:
        if not self.input_topics:
            object.__setattr__(self, "input_topics", (self.input_topic,))

    @property
    def trigger_interval(self) -> str:
        """The trigger as ``DataStreamWriter.trigger(processingTime=...)`` wants it."""
        return f"{int(round(self.trigger_seconds * 1000))} milliseconds"

    def to_env(self) -> dict[str, str]:
        """The environment variables that make :func:`job_config` return this config."""
        env = {
            ENV_BOOTSTRAP_SERVERS: self.bootstrap_servers,
            ENV_INPUT_TOPIC: self.input_topic,
            ENV_OUTPUT_TOPIC: self.output_topic,
            ENV_CHECKPOINT_DIR: self.checkpoint_dir,
            ENV_TRIGGER_SECONDS: repr(float(self.trigger_seconds)),
        }
        if self.input_topics != (self.input_topic,):
            env[ENV_INPUT_TOPICS] = ",".join(self.input_topics)
        if self.side_topic:
            env[ENV_SIDE_TOPIC] = self.side_topic
        if self.max_rows_per_trigger is not None:
            env[ENV_MAX_ROWS_PER_TRIGGER] = str(self.max_rows_per_trigger)
        if self.transactional_id:
            env[ENV_TRANSACTIONAL_ID] = self.transactional_id
        return env


def _positive_number(name: str, raw: str, cast: type) -> float | int:
    try:
        value = cast(raw)
    except ValueError:
        raise JobConfigError(f"{name}={raw!r} is not a {cast.__name__}; set it to a positive number. "
                             + _hint()) from None
    if value <= 0:
        raise JobConfigError(f"{name}={raw!r} must be > 0. " + _hint())
    return value


def job_config(environ: Mapping[str, str] | None = None) -> JobConfig:
    """Read the job's configuration from the environment (``os.environ`` unless given).

    Raises :class:`JobConfigError` naming every missing or empty required variable.
    """
    env = os.environ if environ is None else environ
    missing = [k for k in REQUIRED if not env.get(k, "").strip()]
    if missing:
        raise JobConfigError(f"missing environment variable(s): {', '.join(missing)}. " + _hint())
    trigger = _positive_number(ENV_TRIGGER_SECONDS, env[ENV_TRIGGER_SECONDS], float)
    input_topic = env[ENV_INPUT_TOPIC].strip()
    topics = tuple(t.strip() for t in env.get(ENV_INPUT_TOPICS, "").split(",") if t.strip())
    max_rows = env.get(ENV_MAX_ROWS_PER_TRIGGER, "").strip()
    return JobConfig(
        bootstrap_servers=env[ENV_BOOTSTRAP_SERVERS].strip(),
        input_topic=input_topic,
        output_topic=env[ENV_OUTPUT_TOPIC].strip(),
        checkpoint_dir=env[ENV_CHECKPOINT_DIR].strip(),
        trigger_seconds=float(trigger),
        input_topics=topics or (input_topic,),
        side_topic=env.get(ENV_SIDE_TOPIC, "").strip() or None,
        max_rows_per_trigger=int(_positive_number(ENV_MAX_ROWS_PER_TRIGGER, max_rows, int)) if max_rows else None,
        transactional_id=env.get(ENV_TRANSACTIONAL_ID, "").strip() or None,
    )
