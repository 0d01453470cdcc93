"""The exactly-once sink's commit protocol and the source's batch capping, on synthetic input."""

from __future__ import annotations

from pytest_streamchaos.job.eos import CommitLog, attempt_of, commit_marker, open_marker


def test_first_commit_of_a_batch_wins_and_replays_do_not_count():
    log = CommitLog()
    log.apply(open_marker("s", 1))
    assert log.apply(commit_marker("s", 1, 0, "a0", 3)) == "a0"
    assert log.apply(commit_marker("s", 1, 1, "a1", 3)) == "a1"
    # a restarted driver of the same generation line replays batch 1
    log.apply(open_marker("s", 2))
    assert log.apply(commit_marker("s", 2, 1, "a1-replay", 3)) is None
    assert log.apply(commit_marker("s", 2, 2, "a2", 3)) == "a2"
    assert log.last_batch("s") == 2
    assert log.decided("a1") is True and log.decided("a1-replay") is False
    assert log.decided("never-marked") is None


def test_zombie_generation_is_fenced_after_newer_open():
    log = CommitLog()
    log.apply(open_marker("s", 1))
    log.apply(open_marker("s", 2))  # new driver started
    assert log.apply(commit_marker("s", 1, 5, "zombie", 1)) is None  # old driver wakes up
    assert log.decided("zombie") is False
    assert log.apply(commit_marker("s", 2, 5, "new", 1)) == "new"


def test_zombie_commit_before_new_open_counts_and_blocks_the_replay():
    log = CommitLog()
    log.apply(open_marker("s", 1))
    assert log.apply(commit_marker("s", 1, 5, "old", 1)) == "old"
    log.apply(open_marker("s", 2))
    assert log.apply(commit_marker("s", 2, 5, "new", 1)) is None
    assert log.committed["s"] == {5: "old"}


def test_sinks_are_independent():
    log = CommitLog()
    log.apply(open_marker("a", 9))
    assert log.apply(commit_marker("b", 1, 0, "b0", 1)) == "b0"
    assert log.last_batch("a") == -1 and log.last_batch("b") == 0


def test_attempt_header():
    assert attempt_of([("x", b"1"), ("streamchaos.attempt", b"s/1/0/ab")]) == "s/1/0/ab"
    assert attempt_of(None) is None and attempt_of([("x", b"1")]) is None
