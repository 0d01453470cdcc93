"""The release a user installs works like the editable install the suite runs on (issue 42).

One test, in CI's default run: build the sdist and the wheel (``python -m build``: the wheel is built from
the sdist, so a file the sdist lacks fails here), ``twine check --strict`` both, install the **wheel** into a
clean virtual environment (the editable environment's dependency versions as constraints, from pip's
cache), and from a folder outside the repository run the tutorial's own-job chaos test as a user copies it:
``pipelines/notifications.py`` unchanged (``format("kafka")``, a hard-coded ``localhost:9092``) under a
worker kill, with the jars and Toxiproxy from the machine's prepared cache.

"A difference from the editable install" fails the test, and means any of:

- a file of the package or of its ``fixtures/`` that the editable install imports or reads and the
  installed wheel does not have with the same bytes, or the other way round (``wheel_probe.py`` lists both
  as each interpreter resolves them at run time: the wheel's from its data files in the venv);
- another version, entry point, requirement or licence in the installed metadata;
- the package or the fixtures resolved from anywhere but the venv (the repository must not leak in);
- ``python -m pytest_streamchaos.prepare --for demo`` not finding the prepared stack in the cache;
- the chaos test not passing with the verdict the editable install gives the same job under the same
  fault (``test_chaos_user_jobs.py::test_kafka_to_kafka_job_with_hardcoded_localhost_survives_a_worker_kill``,
  slow): nothing lost or wrong, the kill injected and costing the job an executor.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path

import pytest
from venvs import cached_venv, pip_install, run, user_env, venv

ROOT = Path(__file__).resolve().parents[2]
PROBE = Path(__file__).with_name("wheel_probe.py")
#: the release tools, in a virtual environment of their own kept in the cache (twine's dependencies do not
#: belong in the environment under test); setuptools >= 77 is pyproject.toml's build requirement
TOOLS = ("build==1.6.1", "twine==7.0.0", "setuptools==84.2.1")
#: what the probe must find equal in the editable install and the installed wheel
SAME = ("version", "package", "fixtures", "entry_points", "requires", "license")
def tools() -> Path:
    """The Python of the release tools' venv, made once per machine."""
    return cached_venv("release-tools-" + "-".join(TOOLS).replace("==", "-"), *TOOLS, timeout=600)


def constraints(path: Path) -> Path:
    """The editable environment's distributions, pinned: the venv gets the same dependency versions."""
    pins = {d.metadata["Name"].lower(): f"{d.metadata['Name']}=={d.version}" for d in metadata.distributions()
            if d.metadata["Name"] and d.metadata["Name"].lower() != "pytest-streamchaos"}
    path.write_text("\n".join(sorted(pins.values())) + "\n")
    return path


def user_project(where: Path) -> Path:
    """A folder outside the repository with the tutorial's own-job test as written and the job it runs."""
    block = re.search(r"The whole test .*?:\n\n```python\n(.*?)```", (ROOT / "docs" / "tutorial.md").read_text(), re.S)
    assert block, "docs/tutorial.md lost the own-job test (the block after 'The whole test')"
    (where / "pipelines").mkdir(parents=True)
    shutil.copy(ROOT / "pipelines" / "notifications.py", where / "pipelines" / "notifications.py")
    (where / "test_notifications.py").write_text(block.group(1))
    return where


def probe(python: Path | str, cwd: Path, env: dict[str, str]) -> dict:
    return json.loads(run([str(python), str(PROBE)], 120, cwd=cwd, env=env).stdout)


@pytest.fixture
def work() -> Iterator[Path]:
    """A scratch folder outside the repository, removed afterwards (the venv alone is ~900 MB)."""
    with tempfile.TemporaryDirectory(prefix="streamchaos-wheel-") as d:
        yield Path(d)


def build_and_check(tools_python: Path, dist: Path) -> Path:
    """The sdist and the wheel (the wheel built from the sdist), both through ``twine check --strict``: the wheel."""
    run([str(tools_python), "-m", "build", "--no-isolation", "--outdir", str(dist), str(ROOT)], 300)
    [sdist], [wheel] = sorted(dist.glob("*.tar.gz")), sorted(dist.glob("*.whl"))
    run([str(tools_python), "-m", "twine", "check", "--strict", str(sdist), str(wheel)], 120)
    return wheel


def assert_no_difference(home: Path, project: Path, env: dict[str, str]) -> None:
    """The installed wheel against the editable install (the module docstring's list), and the cache found."""
    editable = probe(sys.executable, project, dict(os.environ))
    installed = probe(home / "bin" / "python", project, env)
    for key in SAME:
        assert installed[key] == editable[key], f"the installed wheel's {key} differs from the editable install's"
    for key in ("package_dir", "fixtures_dir"):
        assert Path(installed[key]).is_relative_to(home), f"{key} {installed[key]} is not the venv's"
    prepared = run([str(home / "bin" / "python"), "-m", "pytest_streamchaos.prepare", "--for", "demo"], 300,
                   cwd=project, env=env)
    said = prepared.stdout + prepared.stderr
    assert "up to date" in said and "download" not in said, f"the prepared stack is in the cache: {said}"


@pytest.mark.chaos(backend="local")
def test_the_wheel_in_a_clean_venv_runs_a_users_chaos_test_like_the_editable_install(work: Path):
    took: dict[str, float] = {}
    t = time.monotonic()
    tools_python = tools()
    took["tools"], t = time.monotonic() - t, time.monotonic()
    wheel = build_and_check(tools_python, work / "dist")
    took["build + twine"], t = time.monotonic() - t, time.monotonic()
    home = work / "venv"
    venv(home)
    pip_install(home, "--no-compile", "--constraint", str(constraints(work / "constraints.txt")), str(wheel),
                timeout=900)
    took["venv"], t = time.monotonic() - t, time.monotonic()

    project = user_project(work / "project")
    env = user_env(home)
    assert_no_difference(home, project, env)
    took["compare"], t = time.monotonic() - t, time.monotonic()

    session = subprocess.run([str(home / "bin" / "python"), "-m", "pytest", "-p", "no:cacheprovider", "-rA",
                              "--chaos-kafka-brokers=1", "--chaos-report=report.json", "test_notifications.py"],
                             capture_output=True, text=True, timeout=900, cwd=project, env=env)
    took["chaos test"] = time.monotonic() - t
    print("wheel check:", ", ".join(f"{k} {v:.1f} s" for k, v in took.items()))
    assert session.returncode == 0, session.stdout[-6000:] + session.stderr[-3000:]
    assert re.search(r"\b1 passed\b", session.stdout)
    assert_the_verdict(json.loads((project / "report.json").read_text()))


def assert_the_verdict(report: list[dict]) -> None:
    """The run the wheel made: what the editable install's twin of this scenario asserts."""
    [doc] = report
    assert doc["sent"] > 1000 and doc["lost"] == 0 and doc["incorrect"] == 0
    assert doc["guarantee_delivered"] in ("exactly-once", "at-least-once")
    kinds = [e["kind"] for e in doc["timeline"]]
    assert "fault_injected" in kinds and "executor_removed" in kinds, "the worker kill cost the job an executor"
