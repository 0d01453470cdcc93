"""The test directories have no ``__init__.py`` (pytest's rootdir import mode), so two test modules
with one basename in different directories break the whole run's collection: caught here, in the
unit run, before a full suite finds it."""

from collections import Counter
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def test_every_test_module_basename_is_unique_across_the_test_directories():
    names = Counter(p.name for p in TESTS.rglob("test_*.py"))
    assert not [n for n, c in names.items() if c > 1], "rename one of each pair (rootdir import mode)"
