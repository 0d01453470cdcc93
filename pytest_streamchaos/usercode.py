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

:func:`check_arity` refuses a callable that cannot be called that way before anything starts;
:func:`fingerprint` tells whether a callable is the same code as in another session (a reference run's key).
:class:`UserCodeError` is what a run raises when one of them raises while it runs: it names the
callable and carries the user's exception (chained, so its traceback is shown) and the user's frames
in its message. Imports nothing of the package.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import os
import sys
import textwrap
import traceback
import types
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


def name_of(fn: object) -> str:
    """A callable's name for messages: ``store_sale``, ``<lambda>``, ``Cls.method``, or its repr."""
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None)
    if name is None and hasattr(fn, "func"):  # functools.partial
        return f"partial({name_of(fn.func)})"
    return str(name) if name else repr(fn)


def annotation_label(name: str) -> str:
    """How messages name annotation ``name``: ``annotate['amount']``, or for the annotation an oracle's
    per-record callable makes (named like ``IdentityOracle(copies=)``) that name itself."""
    return name if name.endswith("=)") else f"annotate[{name!r}]"


def annotation_what(name: str, fn: object) -> str:
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



#: the plain values a fingerprint takes by their repr
_PLAIN = (int, float, str, bytes, bool, type(None), complex)


def fingerprint(fn: object) -> str:
    """What ``fn`` computes, as a digest that is the same in another session as long as its code is: its
    source (a lambda's line), its defaults and closure, and what it reads of its module -- the plain values
    (``RATE = 100``), the functions and classes (their own fingerprints), the modules of the test's project
    (their file's content). A change to any of them changes the digest; nothing that differs between two
    sessions of the same code (an address, an id) enters it. Raises ``ValueError`` naming ``fn`` when its
    source cannot be read (a builtin, code made by ``exec``)."""
    return hashlib.sha256(_print(fn, set()).encode()).hexdigest()[:16]


def _print(obj: Any, seen: set[int]) -> str:
    """The text :func:`fingerprint` hashes, ``seen`` the objects already on the way (a recursion)."""
    if isinstance(obj, _PLAIN):
        return repr(obj)
    if isinstance(obj, types.ModuleType):
        return _module_print(obj)
    home = _foreign_home(obj)
    if home is not None:  # a builtin, the standard library's or an installed package's: by name and version
        return f"{home}.{getattr(obj, '__qualname__', type(obj).__qualname__)} {_version_of(home)}".rstrip()
    if id(obj) in seen:
        return f"<again {type(obj).__qualname__}>"
    seen.add(id(obj))
    if isinstance(obj, list | tuple | set | frozenset):
        items = sorted(_print(v, seen) for v in obj) if isinstance(obj, set | frozenset) else \
            [_print(v, seen) for v in obj]
        return f"{type(obj).__name__}[{', '.join(items)}]"
    if isinstance(obj, dict):
        return "{" + ", ".join(sorted(f"{_print(k, seen)}: {_print(v, seen)}" for k, v in obj.items())) + "}"
    if isinstance(obj, functools.partial):
        return f"partial({_print(obj.func, seen)}, {_print(obj.args, seen)}, {_print(obj.keywords, seen)})"
    if isinstance(obj, types.MethodType):
        return f"method({_print(obj.__func__, seen)}, {_print(obj.__self__, seen)})"
    if isinstance(obj, types.FunctionType):
        return _function_print(obj, seen)
    if isinstance(obj, type):
        return f"class {obj.__module__}.{obj.__qualname__}: {_source(obj)}"
    if _foreign_home(type(obj)) is None:  # an instance of the project's class: its class and its state
        return f"{_print(type(obj), seen)}({_print(getattr(obj, '__dict__', {}), seen)})"
    text = repr(obj)
    return text if " at 0x" not in text else f"<{type(obj).__qualname__}>"


#: the callables written in C (a builtin, a method of a builtin type)
_BUILTIN = (types.BuiltinFunctionType, types.BuiltinMethodType, types.WrapperDescriptorType, types.MethodWrapperType,
            types.MethodDescriptorType)


def _foreign_home(obj: object) -> str | None:
    """The module of a function or class that is not the project's -- a builtin, the standard library's, an
    installed package's, the plugin's own (its code is in the reference's key apart) --, None for the
    project's own code and for anything that is no function or class."""
    if isinstance(obj, _BUILTIN):
        return getattr(obj, "__module__", None) or "builtins"
    if not isinstance(obj, type | types.FunctionType):
        return None
    name = obj.__module__ or "builtins"
    top = name.split(".")[0]
    if top in sys.stdlib_module_names or top in sys.builtin_module_names or top in ("builtins", "pytest_streamchaos"):
        return name
    path = obj.__code__.co_filename if isinstance(obj, types.FunctionType) else \
        getattr(sys.modules.get(name), "__file__", None)
    return name if path is not None and path.startswith(_installed_prefixes()) else None


def _version_of(module: str) -> str:
    return str(getattr(sys.modules.get(module.split(".")[0]), "__version__", ""))


def _source(obj: Any) -> str:
    try:
        return textwrap.dedent(inspect.getsource(obj))
    except (OSError, TypeError):
        raise ValueError(f"{name_of(obj)} has no source to read (a builtin, or code made at run time): "
                         "what it computes cannot be told from one session to the next") from None


def _function_print(fn: types.FunctionType, seen: set[int]) -> str:
    """A function's source, defaults and closure, and the globals its code reads."""
    parts = [_source(fn), _print(fn.__defaults__, seen), _print(fn.__kwdefaults__, seen)]
    parts += [_print(c.cell_contents, seen) for c in fn.__closure__ or () if _filled(c)]
    names: set[str] = set()
    todo = [fn.__code__]
    while todo:
        code = todo.pop()
        names.update(code.co_names)
        todo += [c for c in code.co_consts if isinstance(c, types.CodeType)]
    module_globals = fn.__globals__
    parts += [f"{n}={_print(module_globals[n], seen)}" for n in sorted(names) if n in module_globals]
    return "\n".join(parts)


def _filled(cell: Any) -> bool:
    try:
        cell.cell_contents  # noqa: B018  (an empty cell raises)
    except ValueError:
        return False
    return True


def _module_print(module: types.ModuleType) -> str:
    """An installed or standard module by its name and version; one of the project's by its file's content."""
    path = getattr(module, "__file__", None)
    if path is None or path.startswith(_installed_prefixes()):
        return f"module {module.__name__} {getattr(module, '__version__', '')}".rstrip()
    try:
        with open(path, "rb") as f:
            return f"module {module.__name__} {hashlib.sha256(f.read()).hexdigest()[:16]}"
    except OSError:
        return f"module {module.__name__}"


@functools.lru_cache(maxsize=1)
def _installed_prefixes() -> tuple[str, ...]:
    """Where the standard library and installed packages live (not the test's project)."""
    import site
    import sysconfig

    paths = {sysconfig.get_path(k) for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    paths.update(site.getsitepackages() if hasattr(site, "getsitepackages") else [])
    return tuple(sorted(p for p in paths if p))
