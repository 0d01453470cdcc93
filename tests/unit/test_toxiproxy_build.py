"""Finding or building toxiproxy-server, and the fault layer's pure mappings (no server runs here)."""

from __future__ import annotations

import json
import struct

import pytest

from pytest_streamchaos.netem.probe import kafka_api_versions_v0
from pytest_streamchaos.netem.toxics import kbit_to_rate
from pytest_streamchaos.stack import toxiproxy
from pytest_streamchaos.stack.base import StackError


@pytest.fixture
def bare(monkeypatch, tmp_path):
    """An empty cache and a PATH of one empty folder (no go, no toxiproxy-server); that folder."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.delenv(toxiproxy.ENV_BINARY, raising=False)
    return bin_dir


def fake(path, script: str) -> None:
    path.write_text(f"#!/bin/sh\n{script}\n")
    path.chmod(0o755)


def test_missing_go_names_the_fix_and_leaves_nothing(bare, tmp_path):
    with pytest.raises(StackError) as err:
        toxiproxy.toxiproxy_server_binary()
    msg = str(err.value)
    assert "\n" not in msg
    assert "no `go` on PATH" in msg and "Go >= 1.23" in msg
    assert "toxiproxy-server 2.x binary on PATH" in msg and toxiproxy.ENV_BINARY in msg
    assert not (tmp_path / "cache").exists()  # no lock file, no half-built folder


def test_too_old_go_is_refused_before_building(bare, tmp_path):
    fake(bare / "go", 'echo go1.21.6')  # `go env GOVERSION`
    with pytest.raises(StackError, match=r"go1\.21\.6, older than go1\.23.*fix: install Go >= 1\.23"):
        toxiproxy.toxiproxy_server_binary()
    assert not (tmp_path / "cache").exists()


def test_a_cached_build_is_used_without_go(bare):
    folder = toxiproxy.binary_folder()
    folder.mkdir(parents=True)
    fake(folder / "toxiproxy-server", "exit 0")
    (folder / "done.json").write_text(json.dumps({"version": toxiproxy.TOXIPROXY_VERSION}))
    assert toxiproxy.toxiproxy_server_binary() == folder / "toxiproxy-server"


def test_a_build_without_its_marker_is_not_trusted(bare):
    folder = toxiproxy.binary_folder()
    folder.mkdir(parents=True)
    fake(folder / "toxiproxy-server", "exit 0")  # an interrupted build: the marker is written last
    with pytest.raises(StackError, match="no `go` on PATH"):
        toxiproxy.toxiproxy_server_binary()


def test_binaries_given_on_path_or_env_must_be_2x(bare, monkeypatch):
    fake(bare / "toxiproxy-server", 'echo "toxiproxy-server version 2.5.0"')
    assert toxiproxy.toxiproxy_server_binary() == bare / "toxiproxy-server"
    fake(bare / "toxiproxy-server", 'echo "toxiproxy-server version 1.2.1"')
    with pytest.raises(StackError, match="no `go` on PATH"):  # a 1.x on PATH is passed over
        toxiproxy.toxiproxy_server_binary()
    monkeypatch.setenv(toxiproxy.ENV_BINARY, str(bare / "toxiproxy-server"))
    with pytest.raises(StackError, match=f"{toxiproxy.ENV_BINARY}=.* is not a toxiproxy-server 2.x"):
        toxiproxy.toxiproxy_server_binary()


@pytest.mark.parametrize(("kbit", "rate"), [(800, 100), (1000, 125), (8, 1), (1, 1), (12, 2)])
def test_kbit_maps_to_toxiproxy_kilobytes(kbit, rate):
    assert kbit_to_rate(kbit) == rate


def test_kbit_must_be_positive():
    with pytest.raises(ValueError, match="must be > 0"):
        kbit_to_rate(0)


def test_api_versions_v0_request_bytes():
    req = kafka_api_versions_v0(correlation_id=7, client_id="sc")
    # size 12 | api_key 18 | api_version 0 | correlation_id 7 | client_id "sc"
    assert req == b"\x00\x00\x00\x0c" b"\x00\x12" b"\x00\x00" b"\x00\x00\x00\x07" b"\x00\x02sc"
    default = kafka_api_versions_v0()
    assert struct.unpack(">i", default[:4])[0] == len(default) - 4
    assert default[4:8] == b"\x00\x12\x00\x00"


def test_links_without_a_built_toxiproxy_go_direct_and_build_it_on_first_use(bare, tmp_path):
    """A session whose tests fault none of the job's Kafka links does not build Toxiproxy (``build=False``):
    the brokers advertise their job listeners directly and the links have no proxy (a network fault would act
    on the listeners' ports). A fixed bootstrap port is a first use: the build is tried then, and without Go the
    port is refused naming why."""
    from pytest_streamchaos.stack.kraft.links import JobLinks

    links = JobLinks(None)
    links.start_server(tmp_path / "logs", build=False)
    assert links.server is None and not links.available and links.proxies() == []
    assert links.reason is not None and "reaches the brokers directly" in links.reason
    with pytest.raises(StackError, match=r"kafka port 9092: answering on a fixed port needs Toxiproxy.*no `go`"):
        links.listen(9092, "127.0.0.1:1")
    assert not (tmp_path / "cache").exists()  # the build was tried (no Go): nothing half-made


def test_a_session_builds_toxiproxy_only_when_a_test_faults_the_jobs_kafka_links(pytester) -> None:
    """The collected fault marks decide (stack/kraft/links.py): a network fault on the job's Kafka links asks for
    Toxiproxy; a worker kill or a fault on a Spark link does not."""
    from pytest_streamchaos.settings import KAFKA_LINKS_KEY

    def wants(source: str) -> bool:
        items, rec = pytester.inline_genitems(pytester.makepyfile(source))
        return rec.getcalls("pytest_collection_finish")[0].session.config.stash[KAFKA_LINKS_KEY]

    head = "import pytest\nfrom pytest_streamchaos import kill_worker, network_delay, network_partition\n"
    assert not wants(head + "@kill_worker(after=5)\ndef test_a(): pass\n"
                            "@network_partition(target='worker-0', after=5, duration=3)\ndef test_b(): pass\n")
    assert wants(head + "@network_delay(ms=200, after=5, duration=3)\ndef test_a(): pass\n")
    assert wants(head + "@network_partition(target='broker-1', after=5, duration=3)\ndef test_a(): pass\n")
