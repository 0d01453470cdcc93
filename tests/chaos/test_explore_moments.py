"""Planted moment-bugs, landed by the checkpoint gate (issue 33, items 2 and 3).

Jobs written the way people write them (hard-coded broker, topics and absolute paths, Spark's defaults,
nothing of the plugin): a non-idempotent ``foreachBatch`` file writer and a Kafka-sink job, both
believed exactly-once by their authors, beside their correct twins (an idempotent ``foreachBatch``
keyed by the batch id; the Kafka-sink job held to what it does deliver, at-least-once with nothing
lost). A driver killed while batch N's output is visible and ``commits/N`` not yet written makes the
buggy ones duplicate and the correct ones not.

The kill is aimed at the moment ``output_visible_uncommitted``, which the checkpoint gate lands: the run
preloads the gate into the job because the plan aims at it (the job and the test say nothing of it), and
the driver's thread is held inside the rename that would write ``commits/N``, so the kill cannot miss.
Each test checks that the kill really landed there: the hold on the run's timeline, and from Spark's
own event log that batch N ran in both driver launches.
"""

from pathlib import Path

import pytest
from planted import clear_paths, click, payment

from pytest_streamchaos import JobSetup, kill_driver
from pytest_streamchaos.observe.progress import SparkProgress

APPEND = "jobs/clicks_to_json_lake.py"
BY_BATCH = "jobs/clicks_to_json_lake_by_batch.py"
LEDGER = "jobs/payments_to_ledger.py"


@pytest.fixture
def hardcoded_paths():
    clear_paths()
    yield
    clear_paths()


def run_clicks(chaos, job: str, lake: str):
    return chaos.run(job, rate=100, duration=20, guarantee="exactly-once", kafka_port=9092,
                     inputs={"clicks": click}, outputs={f"file:{lake}": "clickId"})


def assert_landed_between_output_and_commit(run) -> int:
    """The kill landed where it was aimed: held at ``commits/N``, and batch N ran again after the restart
    (Spark reports a batch's progress after its commit: only the second launch did for batch N)."""
    (fault,) = run.faults
    assert fault.hit and fault.aim.phase == "output_visible_uncommitted", fault.aim
    (held,) = [e for e in run.history.trace.timeline if e.kind == "checkpoint_held"]
    n = fault.aim.batch
    assert held.detail["log"] == "commits" and held.detail["when"] == "before" and held.detail["batch"] == n
    progress = SparkProgress(Path(run.job_workdir) / "eventlog")
    progress.poll()
    runs_of_n = [b["app_id"] for b in progress.batches if b["batchId"] == n]
    assert runs_of_n == progress.app_ids[1:] and len(progress.app_ids) == 2, (n, runs_of_n, progress.app_ids)
    assert run.driver_launches == 2
    return n


def assert_replay_duplicated(run) -> None:
    """The kill landed between output and commit, and the replayed batch's records came out twice."""
    assert_landed_between_output_and_commit(run)
    assert run.lost == 0 and run.incorrect == 0
    assert run.duplicates > 0, "the replayed batch's records are written a second time"
    assert run.guarantee_delivered == "at-least-once"


@pytest.mark.slow  # ./dev test's budget: docs/setup.md#slow-tests
@pytest.mark.chaos(backend="local")  # localhost:9092 in the jobs
@pytest.mark.sla(guarantee=None)  # declared exactly-once by its author; the test shows what it delivers
@kill_driver(when="output_visible_uncommitted", after=3, restart_after=0)
def test_an_appending_foreach_batch_writer_duplicates_a_batch_replayed_after_its_files(chaos, hardcoded_paths):
    run = run_clicks(chaos, APPEND, "/tmp/streamchaos-test-clicks-lake")
    print(run.describe())
    assert_replay_duplicated(run)  # appended a second time


# slow (-m slow): ./dev test's budget; the default run's aimed moment is tests/chaos/test_explore_history.py's
@pytest.mark.slow
@pytest.mark.chaos(backend="local")
@kill_driver(when="output_visible_uncommitted", after=3, restart_after=0)
def test_a_foreach_batch_writer_keyed_by_batch_id_stays_exactly_once(chaos, hardcoded_paths):
    run = run_clicks(chaos, BY_BATCH, "/tmp/streamchaos-test-clicks-by-batch-lake")
    print(run.describe())
    assert_landed_between_output_and_commit(run)
    assert run.lost == 0 and run.incorrect == 0 and run.duplicates == 0
    assert run.guarantee_delivered == "exactly-once"


def run_ledger(chaos, guarantee: str):
    return chaos.run(LEDGER, rate=100, duration=20, guarantee=guarantee, kafka_port=9092,
                     inputs={"payments": payment}, outputs={"ledger": "key"})


# slow (-m slow): the same moment and both verdicts are on the foreachBatch lake above (slow too)
@pytest.mark.slow
@pytest.mark.chaos(backend="local")
@pytest.mark.sla(guarantee=None)  # declared exactly-once by its author; the test shows what it delivers
@kill_driver(when="output_visible_uncommitted", after=3, restart_after=0)
def test_the_kafka_sink_declared_exactly_once_duplicates_a_replayed_batch(chaos, hardcoded_paths):
    run = run_ledger(chaos, "exactly-once")
    print(run.describe())
    assert_replay_duplicated(run)  # produced to the ledger again


# slow (-m slow): the same moment and both verdicts are on the foreachBatch lake above (slow too)
@pytest.mark.slow
@pytest.mark.chaos(backend="local")
@kill_driver(when="output_visible_uncommitted", after=3, restart_after=0)
def test_the_kafka_sink_held_to_at_least_once_loses_nothing(chaos, hardcoded_paths):
    run = run_ledger(chaos, "at-least-once")
    print(run.describe())
    assert_landed_between_output_and_commit(run)
    assert run.lost == 0 and run.incorrect == 0
    assert run.guarantee_delivered in ("at-least-once", "exactly-once")


def batch_ran_again(run, n: int) -> bool:
    """Whether batch ``n``'s progress came only from the second driver launch (it was replayed)."""
    progress = SparkProgress(Path(run.job_workdir) / "eventlog")
    progress.poll()
    return [b["app_id"] for b in progress.batches if b["batchId"] == n] == progress.app_ids[1:2]


# slow (-m slow): ./dev test's budget; the default run's aimed moment is tests/chaos/test_explore_history.py's
@pytest.mark.slow
@pytest.mark.chaos(backend="local")
@kill_driver(when="uncommitted_output", after=3, restart_after=0)
def test_on_an_hdfs_checkpoint_the_moment_is_polled_and_its_aim_says_truly_whether_it_landed(chaos):
    """The gate cannot act on HDFS (a rename is an RPC to the NameNode), so the moment is polled: output
    seen and the commit not, the driver SIGSTOPped and checked. Hit or missed, the aim must say what
    happened: a hit is a replayed batch whose output was seen, so duplicates; a miss has none."""
    run = chaos.run("pipelines/enrich_at_least_once.py", rate=100, duration=20, guarantee="at-least-once",
                    setup=JobSetup(checkpoint="hdfs"))
    print(run.describe())
    (fault,) = run.faults
    print("aim on HDFS:", fault.aim)
    assert fault.aim is not None and run.checkpoint.startswith("hdfs://")
    if fault.hit:
        assert batch_ran_again(run, fault.aim.batch), fault.aim
    assert fault.hit == (run.duplicates > 0), (fault.aim, run.duplicates)
    assert run.lost == 0 and run.incorrect == 0
