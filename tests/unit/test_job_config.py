"""The launcher <-> job environment contract (no JVM, no broker)."""

from __future__ import annotations

import pytest

from pytest_streamchaos.job import JobConfig, JobConfigError, job_config
from pytest_streamchaos.job.config import REQUIRED

FULL = {
    "STREAMCHAOS_BOOTSTRAP_SERVERS": "127.0.0.1:9092,127.0.0.1:9093",
    "STREAMCHAOS_INPUT_TOPIC": "in",
    "STREAMCHAOS_OUTPUT_TOPIC": "out",
    "STREAMCHAOS_CHECKPOINT_DIR": "/tmp/ck",
    "STREAMCHAOS_TRIGGER_SECONDS": "0.5",
}


def test_reads_exactly_the_documented_variables():
    cfg = job_config(FULL)
    assert cfg == JobConfig("127.0.0.1:9092,127.0.0.1:9093", "in", "out", "/tmp/ck", 0.5)
    assert cfg.input_topics == ("in",)
    assert cfg.side_topic is None and cfg.max_rows_per_trigger is None
    assert cfg.trigger_interval == "500 milliseconds"


def test_reads_os_environ_by_default(monkeypatch):
    for k, v in FULL.items():
        monkeypatch.setenv(k, v)
    assert job_config().output_topic == "out"


@pytest.mark.parametrize("missing", REQUIRED)
def test_missing_variable_is_named_with_the_fix(missing):
    env = {k: v for k, v in FULL.items() if k != missing}
    with pytest.raises(JobConfigError) as e:
        job_config(env)
    msg = str(e.value)
    assert missing in msg
    assert "pytest-streamchaos" in msg and "by hand" in msg
    # only the missing one is reported as missing
    assert all(k not in msg.split(".")[0] for k in REQUIRED if k != missing)


def test_empty_variable_counts_as_missing():
    with pytest.raises(JobConfigError, match="STREAMCHAOS_INPUT_TOPIC"):
        job_config({**FULL, "STREAMCHAOS_INPUT_TOPIC": "  "})


@pytest.mark.parametrize("bad", ["abc", "0", "-1"])
def test_bad_trigger_seconds(bad):
    with pytest.raises(JobConfigError, match="STREAMCHAOS_TRIGGER_SECONDS"):
        job_config({**FULL, "STREAMCHAOS_TRIGGER_SECONDS": bad})


def test_extras_and_round_trip():
    env = {**FULL, "STREAMCHAOS_INPUT_TOPICS": "a, b,c", "STREAMCHAOS_SIDE_TOPIC": "late",
           "STREAMCHAOS_MAX_ROWS_PER_TRIGGER": "100", "STREAMCHAOS_TRANSACTIONAL_ID": "job-1"}
    cfg = job_config(env)
    assert cfg.input_topics == ("a", "b", "c")
    assert (cfg.side_topic, cfg.max_rows_per_trigger, cfg.transactional_id) == ("late", 100, "job-1")
    assert job_config(cfg.to_env()) == cfg
    assert job_config(job_config(FULL).to_env()) == job_config(FULL)


def test_bad_max_rows():
    with pytest.raises(JobConfigError, match="STREAMCHAOS_MAX_ROWS_PER_TRIGGER"):
        job_config({**FULL, "STREAMCHAOS_MAX_ROWS_PER_TRIGGER": "many"})


def test_config_is_frozen():
    with pytest.raises(AttributeError):
        job_config(FULL).input_topic = "x"  # type: ignore[misc]
