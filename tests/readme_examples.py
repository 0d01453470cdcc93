"""The README's code examples that tests run as they are written (so the README cannot drift)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def readme_checker() -> dict[str, Any]:
    """The README's checker of one's own (the block after its ``readme-checker`` marker), executed:
    its names (``OutputWithin``, ...)."""
    text = (ROOT / "README.md").read_text()
    block = re.search(r"<!-- readme-checker:[^>]*-->\s*```python\n(.*?)```", text, re.S)
    assert block, "README.md lost its checker example (the block after <!-- readme-checker: ... -->)"
    namespace: dict[str, Any] = {}
    exec(compile(block.group(1), "README.md", "exec"), namespace)
    return namespace
