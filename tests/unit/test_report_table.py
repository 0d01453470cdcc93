from pytest_streamchaos.report.terminal import format_table


def test_table_aligns_and_formats() -> None:
    rows = [{"test": "t::a", "faults": "kill_worker[0]@10s", "lost": 0, "reliability": 1.0, "downtime_s": 3.21},
            {"test": "t::bb", "faults": "-", "lost": 12, "reliability": 0.99876543, "downtime_s": 0.0}]
    lines = format_table(rows, [("test", "test"), ("faults", "faults"), ("lost", "lost"),
                                ("reliability", "reliab"), ("downtime_s", "down s")])
    assert lines[0].split() == ["test", "faults", "lost", "reliab", "down", "s"]
    assert set(lines[1].replace(" ", "")) == {"-"}
    assert "0.9988" in lines[3] and lines[3].endswith("0")
    assert len({len(line) for line in lines}) == 1
