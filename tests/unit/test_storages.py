"""Checkpoint storages come from one registry (issue 39): ``--chaos-checkpoint``'s choices and help, the
``JobSetup(checkpoint=...)`` check, the refusals of what a storage cannot serve (the checkpoint gate, a full
local disk, a Delta output, a checkpoint URL the run cannot reach) and where a run's files are all ask
:mod:`pytest_streamchaos.storages`; no module outside it and the HDFS stack's own folder compares a
checkpoint setting with a storage's name."""

from __future__ import annotations

import ast
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from pytest_streamchaos import settings, storages
from pytest_streamchaos.faults.registry import check_run, check_storages, kind_of, parse
from pytest_streamchaos.observe.checkpoints import paths_in
from pytest_streamchaos.observe.storage import RunStorage, locate
from pytest_streamchaos.runner.leftovers import leftovers
from pytest_streamchaos.runner.phases.job import unreachable_checkpoints
from pytest_streamchaos.runner.spec import check_checkpoint, check_outputs

PKG = Path(__file__).resolve().parents[2] / "pytest_streamchaos"
#: where a storage's name may be compared with: the registry, and its services' own folders
HOMES = (PKG / "storages.py", PKG / "stack" / "hdfs", PKG / "stack" / "s3")

#: a storage that is not there: on a service of its own that is its jobs' default filesystem (as HDFS is), whose
#: renames nothing holds
NFS = storages.CheckpointStorage("nfs", "an NFS export", "NFS", fixture="nfs", schemes=("file", "nfs"), gate="",
                                 renames="a rename is a remote call")


@pytest.fixture
def with_nfs(monkeypatch: pytest.MonkeyPatch) -> storages.CheckpointStorage:
    """The registry with :data:`NFS` added, as one more line there would add it."""
    monkeypatch.setitem(storages.STORAGES, NFS.name, NFS)
    return NFS


def test_the_option_and_the_run_take_their_choices_from_the_registry() -> None:
    option = next(o for o in settings.options() if o.name == "checkpoint")
    assert option.choices == tuple(storages.STORAGES) == ("local", "hdfs", "s3")
    assert option.default == storages.DEFAULT == "local"
    assert option.help.endswith(storages.choices_help())
    assert all(f"{s.name!r} ({s.help})" in option.help for s in storages.STORAGES.values())
    assert storages.GATED == storages.ON_HOST == storages.PRELOADED == "local"
    assert storages.remote_prefixes() == ("hdfs:", "s3a:")


def test_an_unknown_storage_is_refused_naming_every_one_in_the_registry(with_nfs: Any) -> None:
    with pytest.raises(ValueError) as refused:
        check_checkpoint("s4")
    line = str(refused.value)
    assert line.startswith("checkpoint='s4': use ") and "\n" not in line
    assert all(f"{name!r} ({s.help})" in line for name, s in storages.STORAGES.items())
    assert "'nfs' (an NFS export)" in line and "'s3' (the stack's S3-compatible object store" in line
    check_checkpoint("nfs")


def test_an_unknown_storage_on_the_command_line_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_x(): pass\n")
    result = pytester.runpytest("-p", "no:cacheprovider", "--chaos-checkpoint=s4")
    assert result.ret != 0
    result.stderr.fnmatch_lines(["*--chaos-checkpoint*invalid choice: 's4' (choose from *local*hdfs*s3*)*"])


def test_the_refusals_of_what_a_storage_cannot_serve_come_from_its_entry(with_nfs: Any) -> None:
    gated = parse("kill_driver", kwargs={"when": "offsets_logged"})
    with pytest.raises(ValueError, match=r"checkpoint gate, which needs the checkpoint on this host's file system "
                                         r"\(on NFS a rename is a remote call\): use checkpoint='local'"):
        check_run([gated], checkpoint="nfs")
    check_run([gated], checkpoint="s3")  # the object store's proxy holds S3A's renames
    damage = parse("drop_commit")
    assert "checkpoint=\"local\"" in (kind_of(damage).refused_by_run(damage, checkpoint="s3") or "")
    disk = parse("fill_disk")
    assert kind_of(disk).refused_by_run(disk, checkpoint="nfs") == (
        "the run keeps its checkpoint on NFS (checkpoint='nfs'), and this fault fills a local filesystem: use "
        "setup=JobSetup(checkpoint=\"local\")")
    namenode = parse("kill_namenode")
    assert "checkpoint=\"hdfs\"" in (kind_of(namenode).refused_by_run(namenode, checkpoint="nfs") or "")
    assert kind_of(namenode).refused_by_run(namenode, checkpoint="hdfs") is None
    with pytest.raises(ValueError, match=r"a Delta table on NFS cannot be read by the run \(with checkpoint='nfs' "
                                         r"the job's relative paths are there too\)"):
        check_outputs({"delta:table": "id"}, "nfs")
    with pytest.raises(ValueError, match=r"a Delta table on HDFS cannot be read"):
        check_outputs({"delta:hdfs://nn:9820/table": "id"}, "local")
    check_outputs({"delta:/tmp/table": "id", "delta:s3a://lake/table": "id", "delta:table": "id"}, "s3")
    # this host's disk needs no reader of its own: relative (the driver's working directory) and absolute tables
    check_outputs({"delta:data/bronze": "id", "delta:/tmp/table": "id", "delta:file:///tmp/t": "id"}, "local")


def test_a_fault_on_a_store_the_run_does_not_use_is_refused_naming_both_ways_to_use_it() -> None:
    outage = parse("kill_s3")
    with pytest.raises(ValueError, match=r"@kill_s3 acts on the stack's S3, which this run does not use: put the "
                                         r"job's checkpoint there \(setup=JobSetup\(checkpoint='s3'\) or "
                                         r"--chaos-checkpoint=s3\), or name a path s3a://<bucket>/\.\.\. in the job"):
        check_storages([outage], storages.reached("local", ["/tmp/x"]))
    check_storages([outage], storages.reached("local", ["s3a://lake/orders"]))
    check_storages([outage], storages.reached("s3", []))
    with pytest.raises(ValueError, match=r"@kill_namenode acts on the stack's HDFS"):
        check_storages([parse("kill_namenode")], storages.reached("s3", []))


def test_what_a_run_on_a_storage_can_reach_comes_from_its_schemes(with_nfs: Any, tmp_path: Path) -> None:
    source = ('q.option("checkpointLocation", "s3a://bucket/chk")\n'
              'r.option("checkpointLocation", "nfs://server/chk")\n')
    assert unreachable_checkpoints(source, "s3") == ["nfs://server/chk"]
    assert unreachable_checkpoints(source, "nfs") == ["s3a://bucket/chk"]
    assert unreachable_checkpoints(source, "local") == ["s3a://bucket/chk", "nfs://server/chk"]
    # what a run leaves on the object store is cleared between a job's runs too; on a default filesystem not
    assert leftovers("s3a://bucket/chk", "local", ["delta:s3a://bucket/t"]) == ["s3a://bucket/chk", "s3a://bucket/t"]
    assert leftovers("nfs://server/chk", "nfs", []) == [] and leftovers("/tmp/chk", "local", []) == ["/tmp/chk"]
    assert storages.of_scheme("nfs") is NFS and storages.of_scheme("s3a") is storages.STORAGES["s3"]
    assert storages.of_scheme("file") is None
    assert storages.remote_prefixes() == ("hdfs:", "nfs:", "s3a:")
    with pytest.raises(ValueError, match=r"an nfs:// path, but this run has no NFS \(chaos\.run\(\.\.\., "
                                         r"setup=JobSetup\(checkpoint='nfs'\)\)\)"):
        locate("nfs://server/chk")
    assert locate("file:/tmp/chk").path == "/tmp/chk"


def test_a_run_on_a_service_gets_it_as_the_jobs_default_filesystem(with_nfs: Any, tmp_path: Path) -> None:
    service = SimpleNamespace(default_fs="nfs://server", filesystem=lambda: "the export's fs",
                              client_conf=lambda: {"fs.nfs.mount": "/export"})
    run = RunStorage.on_service(NFS, service, "t1")
    assert run.kind == "nfs" and run.entry is NFS and run.checkpoint == "nfs://server/streamchaos/t1/checkpoint"
    assert run.conf["spark.hadoop.fs.defaultFS"] == "nfs://server" and run.home == "nfs://server/user/streamchaos-t1"
    assert run.conf["spark.hadoop.fs.nfs.mount"] == "/export"
    place = run.place("nfs://server/chk")
    assert (place.fs, place.path, str(place)) == ("the export's fs", "/chk", "nfs://server/chk")
    with pytest.raises(ValueError, match="on NFS other, but the stack's NFS is at server"):
        run.place("nfs://other/chk")
    local = RunStorage.local(tmp_path)
    assert local.kind == "local" and local.entry.on_host and local.entry.gate and local.service is None
    assert paths_in(["s3a://bucket/chk/", "hdfs://nn/chk"], tmp_path) == ["s3a://bucket/chk", "hdfs://nn/chk"]


def test_an_object_store_is_no_default_filesystem_and_any_bucket_is_on_it(tmp_path: Path) -> None:
    """A run with ``checkpoint="s3"`` keeps its own checkpoint in the store's bucket and leaves the job's relative
    paths in its working directory; a job naming ``s3a://`` with its checkpoint elsewhere reaches the store too."""
    s3 = storages.STORAGES["s3"]
    service = SimpleNamespace(default_fs="s3a://streamchaos", filesystem=lambda: "the store's fs",
                              client_conf=lambda: {"fs.s3a.endpoint": "http://127.0.0.1:9000"})
    run = RunStorage.on_service(s3, service, "t1")
    assert run.checkpoint == "s3a://streamchaos/streamchaos/t1/checkpoint" and run.home is None and run.env == {}
    assert "spark.hadoop.fs.defaultFS" not in run.conf and run.conf["spark.hadoop.fs.s3a.endpoint"]
    place = run.place("s3a://lake/orders/_delta_log")
    assert (place.path, str(place), place.service) == ("lake/orders/_delta_log", "s3a://lake/orders/_delta_log",
                                                        service)
    local = RunStorage.local(tmp_path)
    local.reach(s3, service)
    assert local.conf == {"spark.hadoop.fs.s3a.endpoint": "http://127.0.0.1:9000"}
    assert local.services() == {"s3": service}
    assert local.place("s3a://other/chk").path == "other/chk" and local.kind == "local"


def _mentions_a_setting(node: ast.AST) -> bool:
    """Whether an expression reads a checkpoint setting: a name or attribute about the checkpoint, its
    storage or a URL's scheme (``checkpoint``, ``site.storage``, ``ctx.storage.kind``, ``url.scheme``)."""
    text = ast.unparse(node).lower()
    return any(word in text for word in ("checkpoint", "storage", "scheme"))


def storage_names_compared(words: set[str]) -> list[str]:
    """``path:line: source`` of every comparison of a checkpoint setting with one of ``words`` (the storages'
    names and schemes) outside the registry and the HDFS stack's folder."""
    hits = []
    for path in sorted(PKG.rglob("*.py")):
        if any(path == home or home in path.parents for home in HOMES):
            continue
        tree = ast.parse(path.read_text(), filename=str(path))
        hits += [f"{path.relative_to(PKG.parent)}:{node.lineno}: {ast.unparse(node)}" for node in ast.walk(tree)
                 if _compares(node, words) or _prefixed(node, words)]
    return hits


def _compares(node: ast.AST, words: set[str]) -> bool:
    """``checkpoint == "hdfs"``, ``url.scheme in ("file", "hdfs")``."""
    if not isinstance(node, ast.Compare):
        return False
    sides = [node.left, *node.comparators]
    literal = any(isinstance(c, ast.Constant) and c.value in words for side in sides for c in ast.walk(side))
    return literal and any(_mentions_a_setting(s) for s in sides if not isinstance(s, (ast.Constant, ast.Tuple)))


def _prefixed(node: ast.AST, words: set[str]) -> bool:
    """``part.startswith("hdfs://")``: a URL of a storage's scheme matched by its prefix."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("startswith", "removeprefix")):
        return False
    return any(isinstance(c, ast.Constant) and isinstance(c.value, str) and c.value.split(":", 1)[0] in words
               and ":" in c.value for arg in node.args for c in ast.walk(arg))


def _words() -> set[str]:
    return set(storages.STORAGES) | {scheme for s in storages.STORAGES.values() for scheme in s.schemes
                                     if scheme != "file"}


def test_no_module_compares_a_checkpoint_setting_with_a_storage_name() -> None:
    hits = storage_names_compared(_words())
    assert not hits, ("ask the storage registry (pytest_streamchaos/storages.py) instead of comparing with a "
                      "storage's name:\n" + "\n".join(hits))


def test_the_scan_finds_a_comparison_where_it_should_not_be(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The check can fail: planted comparisons and a URL matched by its prefix are found; a stack backend's
    "local", a plain string and a master URL's ``local`` are not."""
    planted = tmp_path / "pkg"
    planted.mkdir()
    (planted / "mod.py").write_text(
        'def f(checkpoint, site, url, backend, name):\n'
        '    a = checkpoint == "hdfs"\n'
        '    b = site.storage != "local"\n'
        '    c = url.scheme in ("file", "hdfs")\n'
        '    d = backend == "local"\n'
        '    e = name == "hdfs"\n'
        '    return url.startswith(("/", "hdfs:")), url.startswith("local")\n')
    monkeypatch.setattr(f"{__name__}.PKG", planted)
    assert storage_names_compared(_words()) == [
        "pkg/mod.py:2: checkpoint == 'hdfs'", "pkg/mod.py:3: site.storage != 'local'",
        "pkg/mod.py:4: url.scheme in ('file', 'hdfs')", "pkg/mod.py:7: url.startswith(('/', 'hdfs:'))"]
