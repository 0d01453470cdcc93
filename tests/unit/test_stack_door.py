"""Outside stack/, nothing signals a process, scans the file system with glob or reads /proc: that is
the stack's business (issue 25, "the stack interface is the only door")."""

import re
from pathlib import Path

PKG = Path(__file__).resolve().parents[2] / "pytest_streamchaos"
#: ``os.kill``, a ``glob`` (module or ``Path.glob``; not the word ``global``), a ``/proc`` path
DOOR = re.compile(r"os\.kill|\.glob\(|\bglob\b|/proc")


def test_only_the_stack_touches_processes_and_proc():
    hits = [f"{path.relative_to(PKG.parent)}:{n}: {line.strip()}"
            for path in sorted(PKG.rglob("*.py")) if path.relative_to(PKG).parts[0] != "stack"
            for n, line in enumerate(path.read_text().splitlines(), 1) if DOOR.search(line)]
    assert not hits, "move these into pytest_streamchaos/stack/:\n" + "\n".join(hits)
