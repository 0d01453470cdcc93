"""The reference run's comparison on synthetic rows with a known answer (issue 38): silent when a run wrote
what the reference wrote, exact on planted duplicates, losses and double counts, and never a false alarm
where two fault-free runs disagree."""

import random

from pytest_streamchaos.analysis.reference import OutputRows, Reference, compare


def clicks(n: int, seed: int = 1) -> list[dict]:
    rng = random.Random(seed)
    return [{"clickId": str(i), "user": f"u{rng.randrange(20)}", "price": round(rng.uniform(1, 9), 2)}
            for i in range(n)]


def shuffled(rows: list[dict], seed: int) -> list[dict]:
    out = list(rows)
    random.Random(seed).shuffle(out)
    return out


def test_the_same_rows_in_another_order_do_not_diverge():
    ref = OutputRows("lake", clicks(500))
    cmp = compare([ref], [OutputRows("lake", shuffled(ref.rows, 2))], [OutputRows("lake", shuffled(ref.rows, 3))])
    assert cmp.diverged == 0 and cmp.guarantee() == "exactly-once"
    assert cmp.lines() == ["lake (rows, 500 in the reference): as the reference"]


def test_planted_duplicates_and_losses_are_counted_exactly():
    rows = clicks(1000)
    dup = [r for i, r in enumerate(rows) if i % 37 == 0]  # 1 in 37 written twice
    lost = {i for i in range(1000) if i % 53 == 1}  # 1 in 53 never written
    got = [r for i, r in enumerate(rows) if i not in lost] + dup
    cmp = compare([OutputRows("lake", rows)], [OutputRows("lake", rows)], [OutputRows("lake", got)])
    assert (cmp.extra, cmp.missing, cmp.changed) == (len(dup), len(lost), 0)
    assert cmp.diverged == len(dup) + len(lost) and cmp.guarantee() == "none"
    only_dup = compare([OutputRows("lake", rows)], [OutputRows("lake", rows)], [OutputRows("lake", rows + dup)])
    assert only_dup.guarantee() == "at-least-once" and only_dup.extra == len(dup)


def test_an_update_stream_is_compared_by_its_final_value_per_key():
    # a running count per user: the intermediate updates depend on batch boundaries, the final ones do not
    def updates(batches: list[int]) -> tuple[list[dict], list[str]]:
        counts, rows, keys = {}, [], []
        events = [f"u{i % 7}" for i in range(210)]
        start = 0
        for size in batches:
            seen = {}
            for u in events[start:start + size]:
                counts[u] = counts.get(u, 0) + 1
                seen[u] = counts[u]
            rows += [{"user": u, "n": n} for u, n in seen.items()]
            keys += list(seen)
            start += size
        return rows, keys

    a, b, c = updates([70, 70, 70]), updates([30, 100, 80]), updates([105, 105])
    cmp = compare([OutputRows("counts", a[0], a[1])], [OutputRows("counts", b[0], b[1])],
                  [OutputRows("counts", c[0], c[1])])
    assert cmp.outputs[0].mode == "final per key" and cmp.diverged == 0
    doubled = list(c[0]) + [{"user": "u3", "n": 60}]  # a replayed batch counted twice for u3
    bad = compare([OutputRows("counts", a[0], a[1])], [OutputRows("counts", b[0], b[1])],
                  [OutputRows("counts", doubled, [*c[1], "u3"])])
    assert bad.diverged == 1 and bad.changed == 1
    assert bad.lines()[1] == "  changed key u3: expected n=30, got n=60"


def test_a_table_merged_twice_names_the_keys_with_too_high_totals():
    ref = [{"sku": f"s{i}", "on_hand": 10 * i} for i in range(50)]
    got = [dict(r, on_hand=r["on_hand"] + 3) if r["sku"] in ("s4", "s9") else r for r in ref]
    cmp = compare([OutputRows("delta:/t", ref, table=True)], [OutputRows("delta:/t", ref, table=True)],
                  [OutputRows("delta:/t", got, table=True)], Reference(key=("sku",)))
    assert cmp.diverged == 2 and cmp.guarantee() == "none"
    assert [line.strip() for line in cmp.lines()[1:]] == ["changed sku=s4: expected on_hand=40, got on_hand=43",
                                                          "changed sku=s9: expected on_hand=90, got on_hand=93"]
    unkeyed = compare([OutputRows("t", ref, table=True)], [OutputRows("t", ref, table=True)],
                      [OutputRows("t", got, table=True)])
    assert unkeyed.diverged == 2 and unkeyed.changed == 2  # paired on the columns that agree


def test_a_column_that_differs_between_two_fault_free_runs_is_left_out_and_named():
    base = clicks(300)
    stamped = [[dict(r, written_at=1_700_000_000 + run * 1000 + i) for i, r in enumerate(base)] for run in range(3)]
    run = stamped[2] + stamped[2][:5]  # and five written twice
    cmp = compare([OutputRows("lake", stamped[0])], [OutputRows("lake", stamped[1])], [OutputRows("lake", run)])
    assert cmp.outputs[0].ignored == ("written_at",) and cmp.diverged == 5 and cmp.extra == 5
    assert "left out: written_at (differed between two runs without faults)" in "\n".join(cmp.lines())


def test_rows_only_one_fault_free_run_wrote_are_left_out_counted_and_the_rest_compared():
    base = clicks(300)
    late_dropped = base[:-4]  # records later than the watermark, dropped in one run only
    cmp = compare([OutputRows("lake", base)], [OutputRows("lake", late_dropped)], [OutputRows("lake", base[:-10])])
    (out,) = cmp.outputs
    assert (out.expected, out.total, out.left_out) == (296, 300, 4)
    assert cmp.diverged == 6 and cmp.missing == 6 and cmp.guarantee() == "at-most-once"  # the 6 others lost
    assert cmp.lines()[0].startswith("lake (rows, 296 of its 300 rows compared; 4 left out: rows written in only "
                                     "one fault-free run")
    same = compare([OutputRows("lake", base)], [OutputRows("lake", late_dropped)], [OutputRows("lake", late_dropped)])
    assert same.diverged == 0 and same.guarantee() == "exactly-once" and same.left_out == 4


def test_when_less_than_half_is_left_the_output_is_not_comparable():
    base = clicks(300)
    other = base[:100] + [dict(r, clickId=f"x{r['clickId']}", price=0.5) for r in base[100:]]  # 200 rows differ
    cmp = compare([OutputRows("lake", base)], [OutputRows("lake", other)], [OutputRows("lake", base)])
    assert cmp.diverged is None and cmp.guarantee() is None
    said = "not comparable: 200 of its 300 rows differ between two runs of the same input without faults"
    assert said in cmp.lines()[0] and "would leave 100 of 300 to compare" in cmp.lines()[0]


def windowed(n_windows: int, keys: int = 6) -> list[dict]:
    """A 5-minute windowed sum per key, as Spark writes ``window()`` to JSON: a struct of start and end."""
    rows = []
    for w in range(n_windows):
        start, end = f"2026-11-29T10:{5 * w:02d}:00", f"2026-11-29T10:{5 * w + 5:02d}:00"
        rows += [{"window": {"start": start, "end": end}, "sku": f"s{k}", "total": 10 * w + k} for k in range(keys)]
    return rows


def test_windows_closed_in_only_one_fault_free_run_are_left_out_and_the_rest_is_compared():
    # 14 windows x 6 keys = 84 rows; the second fault-free run sent its last records before the watermark closed
    # the last windows: 70 rows in 12 windows agree; the two windows only one run closed are left out
    full = windowed(14)
    fewer = full[:-14] + full[-14:-12]  # 12 whole windows and 2 rows of a 13th
    run = full + [full[5]]  # the faulted run wrote one row twice
    cmp = compare([OutputRows("sums", full)], [OutputRows("sums", fewer)], [OutputRows("sums", run)])
    (out,) = cmp.outputs
    assert (out.expected, out.total, out.left_out) == (72, 84, 12), out
    assert "the last 2 windows, closed in only one fault-free run" in out.left_out_why
    assert cmp.diverged == 1 and cmp.extra == 1 and cmp.guarantee() == "at-least-once"
    assert cmp.lines()[0].startswith("sums (rows, 72 of its 84 rows compared; 12 left out: the last 2 windows")
    # the same under a run that also closed a window only one fault-free run closed, with another value
    tail = full[:-6] + [dict(r, total=r["total"] + 1) for r in full[-6:]]
    quiet = compare([OutputRows("sums", full)], [OutputRows("sums", fewer)], [OutputRows("sums", tail)])
    assert quiet.diverged == 0 and quiet.guarantee() == "exactly-once"
    # flattened window columns (window_start / window_end) are windows too
    flat = [{"window_start": r["window"]["start"], "window_end": r["window"]["end"], "sku": r["sku"],
             "total": r["total"]} for r in full]
    again = compare([OutputRows("sums", flat)], [OutputRows("sums", flat[:-12])], [OutputRows("sums", flat[:-30])])
    assert again.outputs[0].left_out == 12 and again.missing == 18


def test_a_mistyped_key_or_ignored_column_is_refused_naming_the_columns_there_are():
    ref = [{"sku": f"s{i}", "on_hand": 10 * i} for i in range(17)]
    doubled = [dict(r, on_hand=2 * r["on_hand"]) for r in ref]  # every SKU double-counted by a replayed MERGE
    table = [OutputRows("delta:/t", ref, table=True)]
    right = compare(table, table, [OutputRows("delta:/t", doubled, table=True)], Reference(key=["sku"]))
    assert right.changed == 16 and right.guarantee() == "none"  # s0 is 0 either way
    typo = compare(table, table, [OutputRows("delta:/t", doubled, table=True)], Reference(key=["skuu"]))
    assert typo.diverged is None and typo.guarantee() is None
    assert typo.lines() == ["delta:/t: not comparable: Reference(key=['skuu']): no row of delta:/t has a column "
                            "'skuu' (did you mean 'sku'?); its columns: sku, on_hand"]
    ignored = compare(table, table, table, Reference(key=["sku"], ignore=["updatedAt"]))
    assert ignored.diverged is None and "Reference(ignore=['updatedAt']): no row of delta:/t has a column " \
        "'updatedAt'" in ignored.lines()[0]
    assert Reference(key=["sku"]).refused("delta:/t", ref) is None
    assert Reference(key=["skuu"]).refused("delta:/t", []) is None  # no rows yet: nothing to tell by


def test_a_key_that_does_not_tell_a_tables_rows_apart_is_refused():
    rows = [{"region": f"r{i % 3}", "sku": f"s{i}", "on_hand": i} for i in range(84)]
    table = [OutputRows("delta:/inv", rows, table=True)]
    cmp = compare(table, table, table, Reference(key=["region"]))
    assert cmp.diverged is None and cmp.guarantee() is None
    assert "Reference(key=['region']) does not name one row of delta:/inv: its 84 final rows have 3 distinct keys" \
        in cmp.lines()[0]
    assert compare(table, table, table, Reference(key=["region", "sku"])).diverged == 0


def test_an_output_that_cannot_be_compared_leaves_the_guarantee_unknown():
    rows = clicks(50)
    both = [OutputRows("a", rows), OutputRows("b", rows)]
    cmp = compare(both, both, [OutputRows("a", rows)])  # the run did not read b
    assert cmp.diverged == 0 and cmp.guarantee() is None
    assert "b: not comparable: the run did not read this output, so it was not compared" in cmp.lines()


def test_floats_summed_in_another_order_are_equal_and_an_empty_reference_proves_nothing():
    a, b = 0.1 + 0.2 + 0.3, 0.3 + 0.2 + 0.1  # the same sum, added in another order
    assert a != b
    cmp = compare([OutputRows("avg", [{"w": 1, "s": a}])], [OutputRows("avg", [{"w": 1, "s": b}])],
                  [OutputRows("avg", [{"w": 1, "s": b}])])
    assert cmp.diverged == 0
    empty = compare([OutputRows("w", [])], [OutputRows("w", [])], [OutputRows("w", [])])
    assert empty.diverged is None and "the reference run wrote nothing there" in empty.lines()[0]
