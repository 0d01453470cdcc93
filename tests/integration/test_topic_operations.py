"""Kafka's own operations on a topic, through its admin API on the real cluster (the topic faults' machinery,
stack/kraft/operations.py): each partition's log start and end offsets, partitions added, records deleted
below an offset, a reassignment by Kafka's own ``kafka-reassign-partitions`` with its preferred leaders
elected -- each shown by the admin API's view before and after -- and, on a cluster with a spare broker, a
replica moved there with its data."""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka import Producer

from pytest_streamchaos.faults.families.topic import moved_to, rotated
from pytest_streamchaos.stack.local import LocalKafkaCluster
from pytest_streamchaos.testing import wait_for

pytestmark = pytest.mark.integration


def produce(bootstrap: str, topic: str, per_partition: int, partitions: int) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for part in range(partitions):
        for i in range(per_partition):
            p.produce(topic, f"{part}-{i}".encode(), partition=part)
    assert p.flush(30) == 0


def test_offsets_added_partitions_and_deleted_records_show_in_the_admin_view(kafka):
    topic = kafka.create_topic(f"ops-{uuid.uuid4().hex[:6]}", partitions=2)
    produce(kafka.bootstrap_servers, topic, 10, 2)
    assert kafka.topic_offsets(topic) == {0: (0, 10), 1: (0, 10)}
    kafka.add_partitions(topic, 4)
    states = kafka.partition_states(topic)
    assert sorted(states) == [0, 1, 2, 3] and all(s.leader > 0 and len(s.isr) == 3 for s in states.values())
    assert kafka.topic_offsets(topic) == {0: (0, 10), 1: (0, 10), 2: (0, 0), 3: (0, 0)}
    assert kafka.delete_records(topic, {0: 10, 1: 4}) == {0: 10, 1: 4}
    assert kafka.topic_offsets(topic) == {0: (10, 10), 1: (4, 10), 2: (0, 0), 3: (0, 0)}
    assert kafka.topic_offsets("no-such-topic") is None
    assert kafka.administration_refused(("ALTER", "CREATE")) is None  # no authorizer: everything allowed


def test_a_reassignment_by_kafkas_own_tool_moves_each_partitions_leader(kafka):
    topic = kafka.create_topic(f"moved-{uuid.uuid4().hex[:6]}", partitions=2)
    before = {p: list(s.replicas) for p, s in kafka.partition_states(topic).items()}
    target = {p: rotated(r) for p, r in before.items()}
    assert kafka.reassignment_refused() is None  # the tool is in the cache (fetched once per machine)
    out = kafka.reassign_partitions(topic, target)
    assert "Successfully started partition reassignment" in out
    kafka.elect_preferred_leaders(topic, [0, 1])

    def moved() -> bool:  # in every broker's own view: each applies the metadata log at its own pace
        return all(v is not None and all(list(v[p].replicas) == r and v[p].leader == r[0] for p, r in target.items())
                   for v in kafka.partition_views(topic))

    wait_for(moved, timeout=30, what=f"{topic} reassigned to {target} with its preferred leaders leading")
    assert all(target[p][0] != before[p][0] for p in before), "every partition's leader moved"


@pytest.mark.slow  # its own cluster of four brokers (~30 s): the leaders' move above is the default run's
def test_a_replica_moves_with_its_data_to_a_broker_that_had_none(tmp_path):
    cluster = LocalKafkaCluster(tmp_path, brokers=4)
    cluster.start()
    try:
        topic = cluster.create_topic("moving", partitions=1)
        produce(cluster.bootstrap_servers, topic, 200, 1)
        before = list(cluster.partition_states(topic)[0].replicas)
        target = moved_to(before, cluster.broker_ids, {b: 1 for b in before})
        assert target is not None and target[0] not in before and cluster.replication == 3
        cluster.reassign_partitions(topic, {0: target})

        def in_sync() -> bool:
            s = cluster.partition_states(topic)[0]
            return list(s.replicas) == target and set(s.isr) == set(target)

        wait_for(in_sync, timeout=60, what=f"the new replica of {topic}[0] on broker {target[0]} in sync")
        cluster.elect_preferred_leaders(topic, [0])
        wait_for(lambda: cluster.partition_states(topic)[0].leader == target[0], timeout=30,
                 what=f"broker {target[0]} leading {topic}[0]")
        assert cluster.topic_offsets(topic) == {0: (0, 200)}  # its records came along
    finally:
        cluster.stop()
