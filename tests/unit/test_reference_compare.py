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


def test_rows_that_differ_between_two_fault_free_runs_make_the_output_not_comparable():
    base = clicks(300)
    late_dropped = base[:-4]  # records later than the watermark, dropped in one run only
    cmp = compare([OutputRows("lake", base)], [OutputRows("lake", late_dropped)], [OutputRows("lake", base[:-10])])
    assert cmp.diverged is None and cmp.guarantee() is None
    said = "not comparable: 4 of its 300 rows differ between two runs of the same input without faults"
    assert said in cmp.lines()[0]


def test_floats_summed_in_another_order_are_equal_and_an_empty_reference_proves_nothing():
    a, b = 0.1 + 0.2 + 0.3, 0.3 + 0.2 + 0.1  # the same sum, added in another order
    assert a != b
    cmp = compare([OutputRows("avg", [{"w": 1, "s": a}])], [OutputRows("avg", [{"w": 1, "s": b}])],
                  [OutputRows("avg", [{"w": 1, "s": b}])])
    assert cmp.diverged == 0
    empty = compare([OutputRows("w", [])], [OutputRows("w", [])], [OutputRows("w", [])])
    assert empty.diverged is None and "the reference run wrote nothing there" in empty.lines()[0]
