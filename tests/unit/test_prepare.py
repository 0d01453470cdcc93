"""``python -m pytest_streamchaos.prepare``: what is up to date is skipped, the rest runs concurrently with
one line each, a failed step is named and counted, and ``--for demo`` asks only for what the demo needs
(no JVM here: the steps are stand-ins)."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import pytest

from pytest_streamchaos import prepare


@pytest.fixture
def fake_steps(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[str]]:
    """Every step a stand-in: ``hadoop`` is up to date, ``toxiproxy`` fails, the others wait for each other
    (so they only finish when they run at the same time); records which ran."""
    ran: dict[str, list[str]] = {"ran": []}
    both = threading.Barrier(2, timeout=5)

    def run(name: str):
        def go() -> None:
            ran["ran"].append(name)
            if name == "toxiproxy":
                raise RuntimeError("no `go` on PATH; fix: install Go")
            if name in ("kafka", "connector"):
                both.wait()  # a BrokenBarrierError if they ran one after the other
        return go

    table = {name: prepare.Step(name.upper(), (lambda n=name: n == "hadoop"), run(name))
             for name in ("kafka", "connector", "hadoop", "yarn", "toxiproxy", "cds", "k8s")}
    monkeypatch.setattr(prepare, "steps", lambda: table)
    return ran


def test_steps_run_concurrently_and_a_failure_is_named(fake_steps, capsys: pytest.CaptureFixture[str]) -> None:
    assert prepare.main([]) == 1  # one failed step
    assert sorted(fake_steps["ran"]) == ["cds", "connector", "kafka", "toxiproxy"]  # hadoop was up to date
    err = capsys.readouterr().err.splitlines()
    assert err[0] == ("prepare: fetching and building once per machine, concurrently: KAFKA, CONNECTOR, TOXIPROXY, "
                      "CDS ...")
    assert "prepare: TOXIPROXY: no `go` on PATH; fix: install Go" in err
    assert err[-1].startswith("prepare: 1 step(s) failed in ") and err[-1].endswith("(HADOOP up to date)")


def test_the_demo_asks_only_for_what_it_runs(fake_steps) -> None:
    prepare.main(["--for", "demo"])
    # no HDFS, no class-data archives, no Toxiproxy (the demo faults none of the job's Kafka links)
    assert sorted(fake_steps["ran"]) == ["connector", "kafka"]


def test_yarn_jars_only_when_asked(fake_steps) -> None:
    """The default prepares everything but YARN's 93 MB; ``--for yarn`` adds them, each step once."""
    prepare.main([])
    assert "yarn" not in fake_steps["ran"]
    fake_steps["ran"].clear()
    prepare.main(["--for", "all", "--for", "yarn"])
    assert sorted(fake_steps["ran"]) == ["cds", "connector", "kafka", "toxiproxy", "yarn"]


def test_the_demos_early_step_needs_neither_pyspark_nor_any_dependency() -> None:
    """``./dev demo`` runs ``prepare --for demo-early`` while pip installs pyspark and this package's dependencies:
    with nothing but the standard library importable (``-S``: no site-packages), prepare's table of steps is made
    and the early step is Kafka's jars alone, downloaded from their lock (no Ivy, which is pyspark's jar)."""
    root = Path(__file__).resolve().parents[2]
    code = (f"import sys; sys.path.insert(0, {str(root)!r})\n"
            "from pytest_streamchaos import prepare\n"
            "from pytest_streamchaos.machine import artifacts\n"
            "assert set(prepare.steps()) >= {'kafka', 'toxiproxy'}\n"
            "assert artifacts.locked(artifacts.kafka_jars()) is not None\n"
            "print(prepare.profile_steps(['demo-early']))\n")
    done = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "('kafka',)"


def test_kubernetes_only_when_asked(fake_steps) -> None:
    """Kubernetes' binaries (a build of tens of minutes) and the Spark image are in neither the default nor the
    demo's set; ``--k8s`` (``--for k8s``, the k8s manager's profile) asks for them with what a run needs."""
    prepare.main([])
    prepare.main(["--for", "demo"])
    assert "k8s" not in fake_steps["ran"]
    assert "k8s-image" not in prepare.profile_steps(["all"]) and "k8s-image" in prepare.profiles()["k8s"]
    for argv in (["--for", "k8s"], ["--k8s"]):
        fake_steps["ran"].clear()
        prepare.main(argv)
        assert sorted(fake_steps["ran"]) == ["connector", "k8s", "kafka", "toxiproxy"]
