"""Building Kubernetes' binaries from the Go module proxy (no Go runs here: a stand-in ``go`` records its
calls): the generated module, the check of Kubernetes' staging modules, and the short-cut when built."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from pytest_streamchaos.stack.base import StackError
from pytest_streamchaos.stack.k8s import build

NAMES = tuple(build.BINARIES)


def kubernetes_gomod(staging: tuple[str, ...] = (*build.STAGING, *build.UNPUBLISHED)) -> str:
    """A go.mod shaped as Kubernetes' own: its staging modules replaced with folders of its tree."""
    lines = "".join(f"\tk8s.io/{m} => ./staging/src/k8s.io/{m}\n" for m in staging)
    return f"module k8s.io/kubernetes\n\ngo 1.24.0\n\nreplace (\n{lines})\n"


@pytest.fixture
def bare(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """An empty cache and a PATH of one empty folder (no go); that folder."""
    bin_dir = tmp_path / "path"
    bin_dir.mkdir()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("PATH", str(bin_dir))
    return bin_dir


@pytest.fixture
def fake_go(bare: Path, tmp_path: Path) -> Path:
    """A ``go`` on PATH that logs each call, lists Kubernetes' go.mod on ``mod download -json`` and writes
    the ``-o`` file on ``build``; its log."""
    log, gomod = tmp_path / "go.log", tmp_path / "kubernetes.mod"
    gomod.write_text(kubernetes_gomod())
    listing = json.dumps({"Path": "k8s.io/kubernetes", "Version": "v1.34.4", "GoMod": str(gomod)})
    (bare / "go").write_text(f"""#!{sys.executable}
import os, sys
args = sys.argv[1:]
with open({str(log)!r}, "a") as f:
    f.write(" ".join(args) + "\\n")
if args[0] == "env":
    print("go1.26.0")
elif args[2] == "mod":
    print('{{"Path": "go.etcd.io/etcd/server/v3"}}')
    print({listing!r})
elif args[2] == "build":
    out = args[args.index("-o") + 1]
    with open(out, "w") as f:
        f.write("#!/bin/sh\\n")
    os.chmod(out, 0o755)
""")
    (bare / "go").chmod(0o755)
    return log


def calls(log: Path, what: str) -> list[str]:
    """The logged ``go -C <module> <what> ...`` calls' last words (a build's package)."""
    lines = log.read_text().splitlines() if log.exists() else []
    return [line.split()[-1] for line in lines if line.split()[2:3] == [what]]


def test_the_module_replaces_every_staging_module_at_the_pinned_version() -> None:
    text = build.module_text()
    replaced = dict(re.findall(r"^\tk8s\.io/(\S+) => k8s\.io/\1 (v\S+)$", text, re.MULTILINE))
    assert set(replaced) == set(build.STAGING) and len(build.STAGING) == 29
    assert set(replaced.values()) == {"v0.34.4"} and build.STAGING_VERSION == "0." + build.KUBERNETES_VERSION[2:]
    assert text.count("=>") == 29 and "./staging" not in text  # nothing else replaced, no folder of a tree
    requires = re.search(r"^require \(\n(.*?)^\)", text, re.MULTILINE | re.DOTALL).group(1).split("\n")
    assert [r.strip() for r in requires if r] == ["go.etcd.io/etcd/server/v3 v3.6.4", "k8s.io/kubernetes v1.34.4"]
    assert "\ngo 1.24.0\n" in text and "\ngodebug default=go1.24\n" in text


def test_kubernetes_staging_modules_are_checked_against_the_replaced_ones() -> None:
    build.check_staging(kubernetes_gomod())
    with pytest.raises(StackError, match=r"new, not replaced here: newthing; replaced here, no longer staging: none"):
        build.check_staging(kubernetes_gomod((*build.STAGING, "newthing")))
    with pytest.raises(StackError, match=r"new, not replaced here: none; replaced here, no longer staging: kms\); fix"):
        build.check_staging(kubernetes_gomod(tuple(m for m in build.STAGING if m != "kms")))
    with pytest.raises(StackError, match="was not downloaded or names no staging module; fix: make STAGING"):
        build.check_staging("")


def test_built_binaries_are_used_without_go(bare: Path) -> None:
    (build.folder() / "bin").mkdir(parents=True)
    for name in NAMES:
        build.binary(name).write_text("#!/bin/sh\n")
        build.binary(name).chmod(0o755)
    record = {n: {"package": build.BINARIES[n], "seconds": 1.0} for n in NAMES}
    (build.folder() / "bin" / "built.json").write_text(json.dumps(record))
    assert build.is_built() and build.build() == {n: build.binary(n) for n in NAMES}  # no `go` on PATH: not run
    # a binary that its record does not name (a build cut short before the record) is not trusted
    (build.folder() / "bin" / "built.json").write_text(json.dumps({**record, "kubelet": {"package": "other"}}))
    assert not build.is_built() and build.is_built(("kubectl", "etcd"))
    with pytest.raises(StackError, match=r"no `go` on PATH; fix: install Go >= 1\.24"):
        build.build()


def test_only_what_is_missing_is_built_and_a_second_run_runs_no_go(fake_go: Path) -> None:
    lines: list[str] = []
    build.build(lines.append, names=("kubectl", "etcd"))
    assert calls(fake_go, "mod") == ["all"] and calls(fake_go, "build") == [build.BINARIES["kubectl"],
                                                                            build.ETCD_MODULE]
    assert [line.split()[2] for line in lines[2:]] == ["kubectl", "etcd"]  # announced, resolved, then each built
    assert (build.folder() / "module" / "go.mod").read_text() == build.module_text()
    before = fake_go.read_text()
    assert build.build(names=("etcd",)) == {"etcd": build.binary("etcd")} and fake_go.read_text() == before
    build.build(lines.append)  # the other four; the module is resolved already
    assert calls(fake_go, "mod") == ["all"] and len(calls(fake_go, "build")) == len(NAMES)
    assert build.is_built() and set(json.loads((build.folder() / "bin" / "built.json").read_text())) == set(NAMES)


def test_a_failed_build_names_the_fix_and_keeps_what_was_built(fake_go: Path, bare: Path) -> None:
    build.build(names=("kubectl",))
    failing = 'elif args[2] == "build":\n    sys.exit("compile: boom")\n'
    (bare / "go").write_text((bare / "go").read_text().replace('elif args[2] == "build":\n', failing, 1))
    with pytest.raises(StackError, match=r"building kubelet failed .*: compile: boom; fix: .*--for k8s` again"):
        build.build(names=("kubectl", "kubelet"))
    assert build.is_built(("kubectl",)) and not build.binary("kubelet").with_suffix(".partial").exists()
