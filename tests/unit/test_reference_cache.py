"""The reference kept across sessions in pytest's cache (``runner/reference_cache.py``): what is stored reads
back as itself (rows with a table's timestamps, decimals, bytes), a second session reuses it with no run
and says so in one line, a changed key makes a new one and names what changed, an entry of another schema
or one that cannot be read is made again and said so (never a crash), ``--chaos-fresh-reference`` refuses
it, a key that cannot be computed is not kept, and ``--cache-clear`` drops it. The runs are synthetic
(``FakeChaos`` of test_reference_runs.py)."""

from __future__ import annotations

import datetime as dt
import decimal
import gzip
import json
import time
from pathlib import Path

import pytest
from test_reference_runs import TOTALS, FakeChaos

from pytest_streamchaos.facts import OutputRows
from pytest_streamchaos.harness import ChaosFixture
from pytest_streamchaos.runner.reference import References
from pytest_streamchaos.runner.reference_cache import KEEP_PER_JOB, SCHEMA, ReferenceCache, Stored
from pytest_streamchaos.runner.reference_key import RefKey

ODD = [{"at": dt.datetime(2026, 11, 29, 10, 2, 3, 456, tzinfo=dt.timezone.utc), "day": dt.date(2026, 11, 29),
        "price": decimal.Decimal("19.990"), "raw": b"\x00\xff", "took": dt.timedelta(seconds=1.5),
        "own": {"$t": "date", "v": "not a tag"}, "nested": [{"when": dt.time(10, 2)}], "nan": float("nan")}]


def stored(key: str = "k" * 24, job: str = "job.py", made_at: float = 1_800_000_000.0, **parts: dict) -> Stored:
    first = [OutputRows("totals", TOTALS, [f"u{i}" for i in range(len(TOTALS))]),
             OutputRows("delta:/tmp/t", ODD, None, table=True)]
    return Stored(key, {"job": {job: "abc"}, **parts}, first, first[:1], (1234, 56), 1_799_999_000.0, 251.4,
                  made_at, {"slack_s": 5.0, "second_pace": 1.5})


def test_what_is_kept_reads_back_as_itself(tmp_path: Path) -> None:
    cache = ReferenceCache(tmp_path)
    kept = stored()
    assert cache.save(kept) is None
    back, why = cache.load(RefKey(kept.key, kept.parts))
    assert why == "" and back is not None
    assert (back.counts, back.origin, back.seconds, back.made_at, back.pacing) == (
        kept.counts, kept.origin, kept.seconds, kept.made_at, kept.pacing)
    assert back.first[0] == kept.first[0] and back.second == kept.second[:1]
    table = back.first[1]
    assert table.table and table.keys is None and table.name == "delta:/tmp/t"
    row, want = table.rows[0], ODD[0]
    assert {k: v for k, v in row.items() if k != "nan"} == {k: v for k, v in want.items() if k != "nan"}
    assert type(row["price"]) is decimal.Decimal and row["at"].tzinfo is not None and row["nan"] != row["nan"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"{kept.key}.json", f"{kept.key}.rows.json.gz"]


def test_many_rows_are_kept_compressed_and_read_back_on_the_fast_path(tmp_path: Path) -> None:
    """200,000 rows a run (a million: about 12 MB, docs/reference.md)."""
    rows = [{"windowStart": f"2026-11-29 10:{i // 600 % 60:02d}:{i // 10 % 60:02d}", "userId": f"u{i % 97}",
             "count": i % 41} for i in range(200_000)]
    kept = Stored("m" * 24, {"job": {"job.py": "x"}}, [OutputRows("out", rows)], [OutputRows("out", rows)], (1,),
                  None, 1.0, time.time())
    assert ReferenceCache(tmp_path).save(kept) is None
    size = (tmp_path / f"{kept.key}.rows.json.gz").stat().st_size
    assert size < 6e6, f"{size / 1e6:.1f} MB for two runs of 200,000 rows"
    assert json.loads((tmp_path / f"{kept.key}.json").read_text())["tagged"] is False  # plain JSON: no hook
    back, _ = ReferenceCache(tmp_path).load(RefKey(kept.key, kept.parts))
    assert back is not None and back.first[0].rows == rows


def test_an_entry_of_another_schema_is_made_again_and_said_so(tmp_path: Path) -> None:
    cache = ReferenceCache(tmp_path)
    kept = stored()
    cache.save(kept)
    head = tmp_path / f"{kept.key}.json"
    head.write_text(json.dumps({**json.loads(head.read_text()), "schema": SCHEMA - 1}))
    back, why = cache.load(RefKey(kept.key, kept.parts))
    assert back is None and why == f"the cached entry {head.name} is of schema {SCHEMA - 1}, this plugin reads {SCHEMA}"


@pytest.mark.parametrize("damage", ["head", "rows", "gone"])
def test_an_entry_that_cannot_be_read_is_made_again_and_said_so_never_a_crash(tmp_path: Path, damage: str) -> None:
    cache = ReferenceCache(tmp_path)
    kept = stored()
    cache.save(kept)
    head, rows = tmp_path / f"{kept.key}.json", tmp_path / f"{kept.key}.rows.json.gz"
    if damage == "head":
        head.write_text("{not json")
    elif damage == "rows":
        rows.write_bytes(rows.read_bytes()[:40])  # cut short
    else:
        rows.unlink()
    back, why = cache.load(RefKey(kept.key, kept.parts))
    assert back is None and why.startswith(f"the cached entry {head.name} cannot be read (")


def test_a_missing_entry_names_what_changed_since_the_nearest_one_of_the_same_job(tmp_path: Path) -> None:
    cache = ReferenceCache(tmp_path)
    assert cache.load(RefKey("a" * 24, {"job": {"job.py": "1"}}))[1] == (
        "no entry in the cache (the first reference of job.py with this cache)")
    cache.save(stored("b" * 24, modules={"helpers.py": "1"}, conf={"x": "1"}, made_at=1_800_000_000.0))
    cache.save(stored("c" * 24, modules={"helpers.py": "1"}, conf={"x": "2"}, made_at=1_800_000_100.0))
    cache.save(stored("d" * 24, job="other.py"))
    parts = {"job": {"job.py": "abc"}, "modules": {"helpers.py": "2"}, "conf": {"x": "2"}}
    _, why = cache.load(RefKey("e" * 24, parts))
    made = time.strftime("%Y-%m-%d %H:%M", time.localtime(1_800_000_100.0))
    assert why == f"key changed since the one made {made}: its module helpers.py"


def test_only_the_newest_entries_of_a_job_are_kept(tmp_path: Path) -> None:
    cache = ReferenceCache(tmp_path)
    for i in range(KEEP_PER_JOB + 2):
        cache.save(stored(f"{i:024d}", made_at=1_800_000_000.0 + i))
    cache.save(stored("o" * 24, job="other.py"))
    heads = sorted(p.name for p in tmp_path.glob("*.json"))
    assert len(heads) == KEEP_PER_JOB + 1 and f"{0:024d}.json" not in heads and f"{1:024d}.json" not in heads
    assert len(list(tmp_path.glob("*.rows.json.gz"))) == KEEP_PER_JOB + 1


# -- across sessions ---------------------------------------------------------------------------------------

@pytest.fixture
def job(tmp_path: Path) -> Path:
    (tmp_path / "helpers.py").write_text("def total(v):\n    return v\n")
    path = tmp_path / "totals_job.py"
    path.write_text("from helpers import total\nprint('a job')\n")
    return path


def session(tmp_path: Path, job: Path, cache: Path, fresh: bool = False) -> tuple[FakeChaos, object]:
    """One session's run of the job with a reference, its references in ``cache``."""
    chaos = FakeChaos(tmp_path, lambda n: TOTALS, References(cache=ReferenceCache(cache), fresh=fresh))
    return chaos, ChaosFixture(chaos).run(str(job), rate=50, duration=20, outputs=["totals"], reference=True)


def note(run: object) -> str:
    [line] = [n for n in run.reference.notes if n.startswith("the reference:")]  # type: ignore[attr-defined]
    return line


def test_a_second_session_reuses_the_reference_with_no_run_and_says_so(tmp_path: Path, job: Path) -> None:
    cache = tmp_path / "cache"
    one, first = session(tmp_path, job, cache)
    assert len(one.specs) == 3
    assert "made fresh: no entry in the cache (the first reference of totals_job.py" in note(first)
    assert note(first).endswith("kept for the next session)")
    two, again = session(tmp_path, job, cache)
    assert len(two.specs) == 1, "the second session runs only the test's own run"
    compared = two.specs[0]
    assert (compared.input_counts, compared.event_origin) == (one.specs[2].input_counts, one.specs[2].event_origin)
    assert note(again).startswith("the reference: reused from the cache (made ")
    assert f"key {one.references.made and next(iter(one.references.made))[:12]}" in note(again)
    assert again.diverged == 0 and again.guarantee_delivered == "exactly-once"  # type: ignore[attr-defined]
    (job.parent / "helpers.py").write_text("def total(v):\n    return 2 * v\n")  # the job's helper changed
    three, changed = session(tmp_path, job, cache)
    assert len(three.specs) == 3
    assert "made fresh: key changed since the one made " in note(changed)
    assert note(changed).split("made fresh: ")[1].split(": ")[1].startswith("its module helpers.py")


def test_the_option_refuses_the_cached_reference_and_keeps_the_new_one(tmp_path: Path, job: Path) -> None:
    cache = tmp_path / "cache"
    session(tmp_path, job, cache)
    [head] = cache.glob("*.json")
    made = json.loads(head.read_text())["made_at"]
    fresh, run = session(tmp_path, job, cache, fresh=True)
    assert len(fresh.specs) == 3 and "made fresh: --chaos-fresh-reference refuses the cached one" in note(run)
    assert json.loads(head.read_text())["made_at"] > made


def test_a_damaged_entry_is_made_again_in_the_same_session_and_replaced(tmp_path: Path, job: Path) -> None:
    cache = tmp_path / "cache"
    session(tmp_path, job, cache)
    [rows] = cache.glob("*.rows.json.gz")
    rows.write_bytes(b"garbage")
    again, run = session(tmp_path, job, cache)
    assert len(again.specs) == 3 and "cannot be read (BadGzipFile" in note(run)
    with gzip.open(rows, "rt") as f:
        assert json.load(f)["first"][0]["name"] == "totals"


def test_a_reference_whose_key_cannot_be_computed_is_made_and_not_kept(tmp_path: Path, job: Path) -> None:
    (job.parent / "rates.csv").write_text("EUR,1\n")
    job.write_text("import os\nRATES = os.path.join(os.path.dirname(__file__), 'rates.csv')\n")
    cache = tmp_path / "cache"
    one, run = session(tmp_path, job, cache)
    assert len(one.specs) == 3 and not (cache.exists() and list(cache.glob("*.json")))
    assert ("made fresh: not reused from the cache: the job's code names rates.csv (totals_job.py:2), which it was "
            "not given as files=") in note(run) and note(run).endswith("not kept)")
    two, _ = session(tmp_path, job, cache)
    assert len(two.specs) == 3


# -- the plugin: pytest's cache, --cache-clear, the option --------------------------------------------------

CONFTEST = """
import pytest
from pytest_streamchaos.history import History
from synthetic import stateless_trace
from pytest_streamchaos.facts import GeneratorStats, OutputRows, RunFacts
from pytest_streamchaos.plugin import session_references
from pytest_streamchaos.harness import ChaosFixture
from pytest_streamchaos.runner.chaos import Chaos

class FakeChaos(Chaos):
    def _execute(self, spec, inputs):
        self.started += 1
        produced = 100 if spec.input_counts is None else spec.input_counts[0]
        facts = RunFacts(generators={"in": GeneratorStats(produced=produced, event_origin=spec.event_origin)},
                         output_rows=[OutputRows("out", [{"user": "u1", "n": 3}])])
        return History(stateless_trace(rate=50, duration=20), facts=facts, per_record=False)

@pytest.fixture
def chaos(request, tmp_path, streamchaos_settings):
    return ChaosFixture(FakeChaos(cluster=None, kafka=None, workdir=tmp_path, test_dir=request.path.parent,
                     nodeid=request.node.nodeid, references=session_references(request.config, streamchaos_settings)))
"""

TEST = """
def test_job(chaos):
    run = chaos.run("job.py", rate=50, duration=20, outputs=["out"], reference=True)
    print("STARTED", chaos.started, "|", [n for n in run.reference.notes if n.startswith("the reference")][0])
    assert run.diverged == 0
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_job=TEST, job="print('a job')\n")
    return pytester


def started(result: pytest.RunResult) -> tuple[int, str]:
    result.assert_outcomes(passed=1)
    [line] = [ln for ln in result.outlines if "STARTED" in ln]
    n, said = line.split("STARTED ")[1].split(" | ")
    return int(n), said


def test_pytest_s_cache_keeps_it_and_cache_clear_and_the_option_make_it_again(project: pytest.Pytester) -> None:
    assert started(project.runpytest("-s"))[0] == 3
    n, said = started(project.runpytest("-s"))
    assert n == 1 and said.startswith("the reference: reused from the cache (made ")
    n, said = started(project.runpytest("-s", "--chaos-fresh-reference"))
    assert n == 3 and "made fresh: --chaos-fresh-reference refuses the cached one" in said
    n, said = started(project.runpytest("-s", "--cache-clear"))
    assert n == 3 and "made fresh: no entry in the cache " in said
    project.makeini("[pytest]\nstreamchaos_fresh_reference = true\n")
    assert started(project.runpytest("-s"))[0] == 3
    project.makeini("[pytest]\n")
    n, said = started(project.runpytest("-s", "-p", "no:cacheprovider"))
    assert n == 3 and "made fresh: pytest's cache is off (-p no:cacheprovider)" in said
