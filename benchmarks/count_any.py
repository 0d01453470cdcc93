"""How often ``Any`` appears in the package's annotations (issue 50: ``Any`` only where a value really is
arbitrary -- user callables, JSON).

Run: ``python benchmarks/count_any.py [PATH ...]``. Counts, from the source with ``ast``, the annotations
(parameters, returns, annotated assignments and attributes) that name ``Any`` (``Any`` or ``typing.Any``
anywhere inside them, strings included), and the functions with at least one such annotation. Prints the
totals and the modules with the most, and writes ``benchmarks/results/count_any.json``. With PATHs (files or
folders, relative to the repository) it reports those modules' counts too.
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "pytest_streamchaos"
RESULTS = ROOT / "benchmarks" / "results" / "count_any.json"


def names_any(node: ast.expr | None) -> bool:
    """Whether an annotation names ``Any`` (a string annotation is parsed first)."""
    if node is None:
        return False
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:
            return names_any(ast.parse(node.value, mode="eval").body)
        except SyntaxError:
            return False
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and sub.id == "Any":
            return True
        if isinstance(sub, ast.Attribute) and sub.attr == "Any":
            return True
        if sub is not node and isinstance(sub, ast.Constant) and isinstance(sub.value, str) and names_any(sub):
            return True
    return False


def count_module(path: Path) -> dict[str, int]:
    """``annotations``: all of the module's annotations; ``any``: those naming ``Any`` (``signature_any``: of
    them, those in a function's signature); ``functions``, ``functions_any``: functions, those with one."""
    tree = ast.parse(path.read_text(), filename=str(path))
    out = {"annotations": 0, "any": 0, "signature_any": 0, "functions": 0, "functions_any": 0}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args
            params = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
            annotations = [a.annotation for a in params if a is not None and a.annotation is not None]
            if node.returns is not None:
                annotations.append(node.returns)
            hits = sum(names_any(a) for a in annotations)
            out["annotations"] += len(annotations)
            out["any"] += hits
            out["signature_any"] += hits
            out["functions"] += 1
            out["functions_any"] += bool(hits)
        elif isinstance(node, ast.AnnAssign):
            out["annotations"] += 1
            out["any"] += names_any(node.annotation)
    return out


def count(paths: list[Path]) -> dict[str, dict[str, int]]:
    """Module path (relative to the repository) -> its counts, for every ``.py`` under ``paths``."""
    files = sorted({f for p in paths for f in ([p] if p.is_file() else p.rglob("*.py"))})
    return {f.relative_to(ROOT).as_posix(): count_module(f) for f in files}


def totals(per_module: dict[str, dict[str, int]]) -> dict[str, int]:
    keys = ("annotations", "any", "signature_any", "functions", "functions_any")
    return {k: sum(m[k] for m in per_module.values()) for k in keys}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("paths", nargs="*", help="files or folders to report besides the whole package")
    args = parser.parse_args(argv)
    per_module = count([PACKAGE])
    total = totals(per_module)
    share = total["functions_any"] / max(total["functions"], 1)
    print(f"package: {total['any']} of {total['annotations']} annotations name Any "
          f"({total['signature_any']} in signatures); {total['functions_any']} of {total['functions']} functions "
          f"({share:.1%})")
    top = sorted(per_module.items(), key=lambda kv: -kv[1]["any"])[:10]
    for name, counts in top:
        print(f"  {counts['any']:4d}  {name}")
    chosen = {}
    if args.paths:
        chosen = count([ROOT / p for p in args.paths])
        sub = totals(chosen)
        print(f"{' '.join(args.paths)}: {sub['any']} of {sub['annotations']} annotations name Any "
              f"({len(chosen)} modules)")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({"package": total, "chosen": {"paths": args.paths, **totals(chosen)},
                                   "modules": per_module}, indent=1) + "\n")
    print(f"wrote {RESULTS.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
