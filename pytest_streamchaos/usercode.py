"""The test's own callables: their one calling convention, the arity check, and their failures.

A test hands the plugin code that runs inside the harness: record factories, ``annotate``
functions, an oracle's per-record ``copies`` / ``amount``, output id readers. The conventions:

- a **record factory** gets a :class:`~pytest_streamchaos.workload.records.RecordSpec` and returns
  the record (:data:`FACTORY`);
- **every callable that looks at an input record** (``annotate``, ``IdentityOracle(copies=fn)``,
  ``AggregateOracle(amount=fn)``) gets that record as the factory made it -- its value: the dict /
  str / bytes returned (of a ``(key, value)`` pair, the value) -- and nothing else (:data:`RECORD`).
  The ``RecordSpec`` does not come along: what the job sees is the record, and a number about the
  input must be computable from it (the id is in it anyway: the job carries it to the output);
- an **output id reader** gets ``(value, key)`` of one output (:data:`OUTPUT`; a file-sink row is
  the value, its key None).

:func:`check_arity` refuses a callable that cannot be called that way before anything starts.
:class:`UserCodeError` is what a run raises when one of them raises while it runs: it names the
callable and carries the user's exception (chained, so its traceback is shown) and the user's frames
in its message. Imports nothing of the package.
"""

from __future__ import annotations

import inspect
import os
import traceback
from typing import Any

#: the signatures, as error messages show them
FACTORY = "(spec: RecordSpec) -> record"
RECORD = "(record) -> number"
OUTPUT = "(value, key) -> ids"


class UserCodeError(RuntimeError):
    """A callable of the test raised while the run used it. ``what`` names it (``"inputs['sales']
    factory store_sale"``); ``__cause__`` is the user's own exception, with its traceback."""

    def __init__(self, what: str, error: BaseException, detail: str = "") -> None:
        self.what = what
        self.error = error
        where = f" ({detail})" if detail else ""
        frames = user_frames(error)
        super().__init__(f"{what} raised {type(error).__name__}: {error}{where}"
                         + (f"\n{frames}" if frames else ""))
        self.__cause__ = error


def name_of(fn: Any) -> str:
    """A callable's name for messages: ``store_sale``, ``<lambda>``, ``Cls.method``, or its repr."""
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None)
    if name is None and hasattr(fn, "func"):  # functools.partial
        return f"partial({name_of(fn.func)})"
    return str(name) if name else repr(fn)


def annotation_label(name: str) -> str:
    """How messages name annotation ``name``: ``annotate['amount']``, or for the annotation an oracle's
    per-record callable makes (named like ``IdentityOracle(copies=)``) that name itself."""
    return name if name.endswith("=)") else f"annotate[{name!r}]"


def annotation_what(name: str, fn: Any) -> str:
    """How messages name the callable of annotation ``name``: ``annotate['amount'] total``."""
    return f"{annotation_label(name)} {name_of(fn)}"


def user_frames(error: BaseException) -> str:
    """The traceback lines of ``error`` that are not the plugin's own (where the user's code failed)."""
    pkg = os.path.dirname(os.path.abspath(__file__)) + os.sep  # the plugin's own frames are left out
    tb = traceback.extract_tb(error.__traceback__)
    mine = [f for f in tb if not f.filename.startswith(pkg)]
    return "".join(traceback.format_list(mine)).rstrip()


def check_arity(fn: Any, n: int, what: str, expected: str) -> None:
    """Raise ``ValueError`` naming ``what`` and the ``expected`` signature unless ``fn`` is a callable
    that can be called with ``n`` positional arguments. Builtins without a signature are accepted."""
    if not callable(fn):
        raise ValueError(f"{what} must be a callable {expected}, got {fn!r}")
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):  # a builtin or C callable without a signature: trust it
        return
    try:
        sig.bind(*([None] * n))
    except TypeError:
        raise ValueError(f"{what} {_takes(sig, n)}; expected {expected}: {name_of(fn)}{sig}") from None


def _takes(sig: inspect.Signature, n: int) -> str:
    """Why ``sig`` cannot take ``n`` positional arguments, e.g. ``takes 2 parameters``."""
    ps = list(sig.parameters.values())
    kw_only = [p.name for p in ps if p.kind == p.KEYWORD_ONLY and p.default is p.empty]
    if kw_only:
        return f"requires keyword-only parameter(s) {', '.join(kw_only)}"
    positional = [p for p in ps if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    required = [p for p in positional if p.default is p.empty]
    if len(required) > n:
        extra = "" if len(required) == len(positional) else " required"
        return f"takes {len(required)}{extra} parameter{'s' if len(required) != 1 else ''}"
    return f"takes {len(positional)} parameter{'s' if len(positional) != 1 else ''}"

