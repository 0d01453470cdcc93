"""The documentation's code examples that tests run as they are written (so the docs cannot drift)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CHECKS_PAGE = ROOT / "docs" / "checks.md"


def checker_example() -> dict[str, Any]:
    """docs/checks.md's checker of one's own (the block after its ``checker-example`` marker), executed:
    its names (``OutputWithin``, ...)."""
    text = CHECKS_PAGE.read_text()
    block = re.search(r"<!-- checker-example:[^>]*-->\s*```python\n(.*?)```", text, re.S)
    assert block, "docs/checks.md lost its checker example (the block after <!-- checker-example: ... -->)"
    namespace: dict[str, Any] = {}
    exec(compile(block.group(1), str(CHECKS_PAGE), "exec"), namespace)
    return namespace
