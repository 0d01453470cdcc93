"""The reference kept in pytest's cache, on the real stack (issue 48): three pytest sessions of one project
in a row, sharing its ``.pytest_cache``, on a job split in two files (``jobs/refcache``: the script and the
helper module ``windows.py`` it imports) whose ``foreachBatch`` append writes a replayed batch twice.

1. The first session makes the reference (two fault-free runs) and a fault-free run compared with it: three
   runs, nothing differs (the batch id column differs between the two reference runs and is left out).
2. The second session reuses it from the cache with **no** extra run -- one run in all, its driver killed
   while a batch's output is visible and uncommitted -- and the cached reference, made minutes earlier on
   an event-time clock of its own, finds exactly the rows the replay wrote twice.
3. The helper module changes: the third session's key differs, it says what changed and makes a new one.

Each session is a subprocess of pytest on a small test file (the stack started and stopped by it).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
JOB = Path(__file__).parent / "jobs" / "refcache"
OUT = "/tmp/streamchaos-test-refcache-clicks"

INNER = '''
import json
import os
import shutil
from collections import Counter

import pytest

from pytest_streamchaos import kill_driver

OUT = "{out}"


def click(rec):
    return {{"clickId": str(rec.id), "userId": rec.key, "url": f"/p/{{rec.key_index}}", "clickedAt": rec.ts}}


@pytest.fixture(autouse=True)
def clean():
    for p in (OUT, OUT + "-chk"):
        shutil.rmtree(p, ignore_errors=True)
    yield
    for p in (OUT, OUT + "-chk"):
        shutil.rmtree(p, ignore_errors=True)


@pytest.mark.chaos
@pytest.mark.parametrize("fault", ["clean",
                                   pytest.param("driver", marks=kill_driver(when="output_visible_uncommitted"))])
def test_windows(chaos, fault):
    run = chaos.run("job/clicks_per_window_appended.py", rate=50, duration=15, kafka_port=9092,
                    inputs={{"clicks": click}}, outputs=[f"file:{{OUT}}"], reference=True)
    cmp = run.reference
    rows = [json.dumps(r, sort_keys=True) for r in run.facts.output_rows[0].rows]
    out = {{"started": chaos.started, "notes": list(cmp.notes), "lines": cmp.lines(), "diverged": run.diverged,
           "expected": cmp.outputs[0].expected, "extra": cmp.extra, "missing": cmp.missing, "changed": cmp.changed,
           "twice": sum(n - 1 for n in Counter(rows).values() if n > 1),
           "faults": [[f.kind, bool(f.injected), f.aim.hit if f.aim is not None else None] for f in run.fault_records]}}
    with open(os.environ["REFCACHE_RESULT"], "w") as f:
        json.dump(out, f)
'''


def session(project: Path, fault: str, n: int) -> dict[str, Any]:
    """One pytest session of the project's test with ``fault``; what its test wrote of its run."""
    result = project / f"result-{n}.json"
    env = {**os.environ, "REFCACHE_RESULT": str(result),
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-m", "pytest", "test_inner.py", "-k", fault, "-q", "-s",
                          "--rootdir", str(project), "-o", f"cache_dir={project / '.pytest_cache'}",
                          f"--basetemp={project / f'tmp-{n}'}"], cwd=project, env=env, capture_output=True,
                         text=True, timeout=1200)
    assert out.returncode == 0 and result.exists(), out.stdout[-4000:] + out.stderr[-2000:]
    return json.loads(result.read_text())


def note(got: dict[str, Any]) -> str:
    [line] = [n for n in got["notes"] if n.startswith("the reference:")]
    return line


@pytest.mark.chaos
@pytest.mark.slow  # three sessions, each starting the stack: about 10 minutes on 2 cores
def test_a_second_session_reuses_the_cached_reference_with_no_run_and_a_changed_helper_makes_a_new_one(tmp_path):
    project = tmp_path / "project"
    shutil.copytree(JOB, project / "job", ignore=shutil.ignore_patterns("__pycache__"))
    (project / "test_inner.py").write_text(INNER.format(out=OUT))

    first = session(project, "clean", 1)
    assert first["started"] == 3, note(first)  # the reference's two runs and the test's own
    assert "made fresh: no entry in the cache" in note(first) and note(first).endswith("kept for the next session)")
    assert first["expected"] > 0 and first["diverged"] == 0, first["lines"]

    second = session(project, "driver", 2)
    assert second["started"] == 1, f"the second session ran {second['started']} runs: {note(second)}"
    assert note(second).startswith("the reference: reused from the cache (made "), note(second)
    assert second["faults"] == [["kill_driver", True, True]], second
    assert second["twice"] > 0, "the driver kill replayed a batch that wrote nothing"
    assert (second["extra"], second["missing"], second["changed"]) == (second["twice"], 0, 0), second["lines"]

    windows = project / "job" / "windows.py"
    windows.write_text(windows.read_text().replace('SIZE = "2 seconds"', 'SIZE = "2 seconds"  # the same window'))
    third = session(project, "clean", 3)
    assert third["started"] == 3, note(third)
    assert "made fresh: key changed since the one made " in note(third), note(third)
    assert note(third).split("made fresh: ")[1].split(": ", 1)[1].startswith("its module windows.py"), note(third)
    assert third["diverged"] == 0, third["lines"]
