"""The topic faults (Kafka's own operations) and the checkpoint faults without a stack: their marks and
defaults, the bad input refused in one line before a run starts (a count that does not grow the input, a
checkpoint elsewhere or on HDFS, a Kafka that cannot take the operation), and each checkpoint damage on a
checkpoint laid out as Spark writes it (the files before and after). Kafka's side: tests/integration/
test_topic_operations.py; jobs: tests/chaos/test_chaos_topic_faults.py, test_chaos_checkpoint_faults.py."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from pytest_streamchaos import add_partitions, drop_commit
from pytest_streamchaos.faults.families.checkpoint import newest_state_file, state_files, state_version
from pytest_streamchaos.faults.families.topic import moved_to, rotated
from pytest_streamchaos.faults.kind import JobSite
from pytest_streamchaos.faults.registry import KINDS, check_run, kind_of, parse
from pytest_streamchaos.faults.spec import FaultSpecError
from pytest_streamchaos.faults.timeline import PlannedFault
from pytest_streamchaos.observe.checkpoints import CheckpointWatcher
from pytest_streamchaos.stack.kraft.operations import TopicAdministration

OFFSETS = 'v1\n{"batchWatermarkMs":0,"batchTimestampMs":1795780000000}\n{"invoices":{"1":812,"0":790}}\n'


def test_the_checkpoint_faults_aim_at_their_moment_and_restart_the_driver_at_once():
    drop = parse("drop_commit")
    assert (drop.when, drop.after, drop.restart_after) == ("between_batches", 5.0, 0.0)
    assert parse("tear_offsets").when == "offsets_logged" and parse("tear_offsets").params == {"how": "truncate"}
    assert parse("damage_state", kwargs={"how": "truncate"}).params == {"how": "truncate", "partition": 0,
                                                                         "operator": 0}
    assert all(KINDS[k].stops_driver(parse(k)) for k in ("drop_commit", "tear_offsets", "damage_state"))
    with pytest.raises(FaultSpecError, match=r"how='half' must be one of 'truncate', 'empty', 'tmp'"):
        parse("tear_offsets", kwargs={"how": "half"})
    with pytest.raises(FaultSpecError, match=r"when='tasks_running' is not a moment this fault can aim at"):
        parse("drop_commit", kwargs={"when": "tasks_running"})

    @drop_commit(after=3)
    def test_x() -> None: ...

    assert [(m.name, m.kwargs) for m in test_x.pytestmark] == [("drop_commit", {"after": 3})]


def test_the_topic_faults_check_their_arguments_and_say_they_are_permanent():
    with pytest.raises(FaultSpecError, match="cannot be undone"):
        parse("recreate_topic", kwargs={"duration": 5})
    with pytest.raises(FaultSpecError, match=r"topic='output' must be 'input'"):
        parse("expire_records", kwargs={"topic": "output"})
    with pytest.raises(FaultSpecError, match=r"move='brokers' must be 'leaders' or 'replicas'"):
        parse("reassign_partitions", kwargs={"move": "brokers"})
    with pytest.raises(FaultSpecError, match=r"count=1 must be >= 2"):
        parse("add_partitions", kwargs={"count": 1})
    assert all(KINDS[k].permanent(parse(k)) for k in ("recreate_topic", "expire_records", "add_partitions"))
    reassign = parse("reassign_partitions", kwargs={"topic": "output"})
    assert reassign.params == {"topic": "output", "move": "leaders"}
    assert KINDS["reassign_partitions"].permanent(reassign)
    healed = parse("reassign_partitions", kwargs={"duration": 10})
    assert not KINDS["reassign_partitions"].permanent(healed)


def test_a_count_that_does_not_grow_the_input_is_refused_before_the_run():
    check_run([parse("add_partitions", kwargs={"count": 4})], checkpoint="local", partitions=2)
    check_run([parse("add_partitions")], checkpoint="local", partitions=2)  # one more by default
    with pytest.raises(ValueError, match=r"^@add_partitions: count=2 does not grow the input: it has 2 partitions "
                                         r"\(chaos.run\(partitions=2\)\); give count > 2"):
        check_run([parse("add_partitions", kwargs={"count": 2})], checkpoint="local", partitions=2)

    @add_partitions(count=3)
    def test_x() -> None: ...

    assert test_x.pytestmark[0].kwargs == {"count": 3}


def test_a_checkpoint_fault_on_a_checkpoint_the_run_cannot_reach_is_refused_in_one_line(tmp_path: Path):
    with pytest.raises(ValueError, match=r'^@drop_commit: it damages the checkpoint .* use setup=JobSetup'
                                         r'\(checkpoint="local"\)$'):
        check_run([parse("drop_commit")], checkpoint="hdfs")
    site = JobSite(workdir=tmp_path, checkpoints=(str(tmp_path / "chk"),), harness=(), storage="local")
    kind = KINDS["tear_offsets"]
    assert kind.before_job([parse("tear_offsets")], site) is None
    elsewhere = JobSite(workdir=tmp_path, checkpoints=(), harness=(), storage="local", elsewhere=("s3a://lake/chk",))
    with pytest.raises(ValueError, match=r"^@tear_offsets: the job keeps its checkpoint at s3a://lake/chk, which this "
                                         r"run cannot reach"):
        kind.before_job([parse("tear_offsets")], elsewhere)
    containers = JobSite(workdir=tmp_path, checkpoints=(), harness=(), storage="local", separate_hosts=True)
    with pytest.raises(ValueError, match="run it on the local backend"):
        kind.before_job([parse("tear_offsets")], containers)


class Brokers(TopicAdministration):
    """A Kafka as the topic faults' refusals see it: its brokers, the topics' replication, its ACLs' answer, its
    admin operations (:class:`~pytest_streamchaos.stack.capabilities.TopicAdmin`, the real mixin's)."""

    def __init__(self, brokers: int, replication: int = 3, denied: str | None = None) -> None:
        self._brokers, self._replication, self._denied = brokers, replication, denied

    @property
    def broker_ids(self) -> list[int]:
        return list(range(1, self._brokers + 1))

    @property
    def replication(self) -> int:
        return self._replication

    def administration_refused(self, operations: Sequence[str]) -> str | None:
        return self._denied

    def reassignment_refused(self) -> str | None:
        return None


def test_a_kafka_that_cannot_take_the_operation_refuses_it_in_one_line():
    reassign = parse("reassign_partitions")
    assert kind_of(reassign).refused_by_kafka(reassign, Brokers(3)) is None
    assert "needs at least 2 brokers, and the cluster has 1: --chaos-kafka-brokers 3" in \
        kind_of(reassign).refused_by_kafka(reassign, Brokers(1, 1))
    replicas = parse("reassign_partitions", kwargs={"move": "replicas"})
    assert "the run's topics have 3 replicas on 3 brokers (every broker holds one): run with --chaos-kafka-brokers " \
           "4, or move='leaders'" in kind_of(replicas).refused_by_kafka(replicas, Brokers(3))
    assert kind_of(replicas).refused_by_kafka(replicas, Brokers(4)) is None
    recreate = parse("recreate_topic")
    denied = kind_of(recreate).refused_by_kafka(recreate, Brokers(3, denied="the cluster's ACLs deny this client "
                                                                            "CREATE on the cluster"))
    assert denied.startswith("it acts through Kafka's admin API (CREATE on the cluster), and the cluster's ACLs deny "
                             "this client CREATE on the cluster: run it on the Kafka the plugin starts")
    assert "\n" not in denied


def test_a_reassignment_moves_each_partition_s_preferred_leader():
    assert rotated([3, 1, 2]) == [1, 2, 3]
    assert moved_to([1, 2, 3], [1, 2, 3, 4], {}) == [4, 2, 3]
    assert moved_to([1, 2, 3], [1, 2, 3], {}) is None
    assert moved_to([1, 2], [1, 2, 3, 4], {3: 2, 4: 1}) == [4, 2]  # the least loaded spare broker


def checkpoint(root: Path, batches: int = 4) -> CheckpointWatcher:
    """A query's checkpoint as Spark lays it out: offsets/ and commits/ of ``batches`` batches with their
    checksum files, and a stateful operator's state store files of partition 0 (versions 1..batches)."""
    for log in ("offsets", "commits"):
        (root / log).mkdir(parents=True)
        for n in range(batches):
            (root / log / str(n)).write_text(OFFSETS if log == "offsets" else 'v1\n{"nextBatchWatermarkMs":0}\n')
            (root / log / f".{n}.crc").write_bytes(b"crc")
    state = root / "state" / "0" / "0"
    state.mkdir(parents=True)
    (state.parent.parent / "_metadata").mkdir()
    for v in range(1, batches + 1):
        (state / f"{v}.delta").write_bytes(b"x" * 100)
        (state / f".{v}.delta.crc").write_bytes(b"crc")
    (state / "2.snapshot").write_bytes(b"s" * 50)
    return CheckpointWatcher(str(root))


def damaged(kind: str, cp: CheckpointWatcher, **kwargs: object) -> dict:
    spec = parse(kind, kwargs=kwargs)
    action = KINDS[kind](None)  # type: ignore[arg-type]  # damage() reads only the checkpoint it is given
    done = action.damage(cp, PlannedFault(spec, 0, None, 0.0))
    assert action.landed_on(cp, done) is None
    return done


def test_drop_commit_deletes_the_newest_commit_and_leaves_its_offsets(tmp_path: Path):
    cp = checkpoint(tmp_path)
    done = damaged("drop_commit", cp)
    assert (done["file"], done["batch"], done["replays"]) == ("commits/3", 3, 3)
    assert done["before"]["commits"] == ["0", "1", "2", "3"] and done["after"]["commits"] == ["0", "1", "2"]
    assert sorted(cp.names("commits")) == [".0.crc", ".1.crc", ".2.crc", "0", "1", "2"]
    assert cp.latest_committed_batch() == 2 and cp.uncommitted_batch() == 3  # batch 3 runs again


@pytest.mark.parametrize(("how", "size"), [("truncate", len(OFFSETS) // 2), ("empty", 0)])
def test_tear_offsets_leaves_the_newest_offsets_torn_without_its_checksum(tmp_path: Path, how: str, size: int):
    cp = checkpoint(tmp_path)
    done = damaged("tear_offsets", cp, how=how)
    assert (done["file"], done["bytes"]) == ("offsets/3", size)
    assert (tmp_path / "offsets" / "3").read_text() == OFFSETS[:size]
    assert not (tmp_path / "offsets" / ".3.crc").exists() and (tmp_path / "offsets" / ".2.crc").exists()


def test_tear_offsets_can_leave_a_stray_temporary_file_of_the_next_batch(tmp_path: Path):
    cp = checkpoint(tmp_path)
    done = damaged("tear_offsets", cp, how="tmp")
    stray = done["file"].split("/")[1]
    assert stray.startswith(".4.") and stray.endswith(".tmp") and done["batch"] == 3
    assert (tmp_path / "offsets" / "3").read_text() == OFFSETS  # the newest one intact
    assert cp.uncommitted_batch() is None  # Spark's log does not count it


@pytest.mark.parametrize("how", ["delete", "truncate"])
def test_damage_state_hits_the_newest_state_file_of_the_partition(tmp_path: Path, how: str):
    cp = checkpoint(tmp_path)
    done = damaged("damage_state", cp, how=how)
    assert (done["file"], done["version"], done["batch"]) == ("state/0/0/4.delta", 4, 3)
    path = tmp_path / "state" / "0" / "0" / "4.delta"
    assert (not path.exists()) if how == "delete" else path.read_bytes() == b"x" * 50
    assert not (path.parent / ".4.delta.crc").exists() and (path.parent / ".3.delta.crc").exists()


def test_damage_state_on_a_stateless_query_says_so(tmp_path: Path):
    (tmp_path / "commits").mkdir()
    spec = parse("damage_state")
    with pytest.raises(RuntimeError, match=r"no state/ at all: a stateless query\): damage_state needs a stateful"):
        KINDS["damage_state"](None).damage(CheckpointWatcher(str(tmp_path)), PlannedFault(spec, 0, None, 0.0))


def test_the_newest_state_file_is_the_per_batch_file_of_the_highest_version():
    assert newest_state_file(["1.delta", "2.delta", "2.snapshot", ".2.delta.crc", "_metadata"]) == "2.delta"
    assert newest_state_file(["3.zip", "12_0f3a.zip", "12.changelog", "SSTs"]) == "12.changelog"
    assert newest_state_file(["7_9c2e.zip", "6_1b2d.zip"]) == "7_9c2e.zip"
    assert newest_state_file(["_metadata", ".1.delta.crc"]) is None
    assert state_version("12_0f3a.zip") == 12 and state_version("SSTs") is None
    # in version order, not the names' (a run past version 9 once listed 10.delta first and cut it off)
    assert state_files(["10.delta", "9.delta", "_metadata", "10.snapshot", ".9.delta.crc"]) == [
        "9.delta", "10.delta", "10.snapshot"]


def test_an_offsets_answer_right_after_a_leadership_change_is_asked_again():
    """Measured: ListOffsets to a partition's new leader answers OFFSET_NOT_AVAILABLE ("Leader high watermark is
    not caught up") for a moment, which the client does not flag retriable; an authorization error is final."""
    from confluent_kafka import KafkaError, KafkaException

    from pytest_streamchaos.stack.kraft.operations import retriable

    assert retriable(KafkaException(KafkaError(KafkaError.OFFSET_NOT_AVAILABLE)))
    assert retriable(KafkaException(KafkaError(KafkaError.NOT_LEADER_FOR_PARTITION)))
    # a broker behind the leader epoch the client asks with, right after a leader move (a flapping-leaders run)
    assert retriable(KafkaException(KafkaError(KafkaError.UNKNOWN_LEADER_EPOCH)))
    assert not retriable(KafkaException(KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED)))
    assert not retriable(ValueError("not Kafka's"))
