"""What one output record says: the input ids it reports, its key, event-time window and aggregate value.

The collector's reading of one output's bytes, read leniently (see
:mod:`pytest_streamchaos.observe.collector`): ids from ``id`` (int) or ``ids`` (list), or a JSON path,
or the test's own callable; the key from ``key`` (``"k<n>"`` or an int; else the Kafka message key);
the window from ``window_start``/``window_end`` or ``window: {start, end}``, as epoch milliseconds /
seconds or ISO-8601 strings. What cannot be read raises ``ValueError`` (a malformed output); a
callable of the test that raises is a :class:`~pytest_streamchaos.usercode.UserCodeError`.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from pytest_streamchaos.usercode import UserCodeError, name_of

try:  # orjson is several times faster; optional ("fast" extra)
    import orjson

    _loads: Callable[[bytes], Any] = orjson.loads
    _JSONError: tuple[type[Exception], ...] = (orjson.JSONDecodeError, ValueError)
except ImportError:  # pragma: no cover - depends on the environment
    import json

    _loads = json.loads
    _JSONError = (ValueError, UnicodeDecodeError)

#: A custom id reader: ``(value_bytes, key_bytes) -> list of input ids``.
IdReader = Callable[[bytes, "bytes | None"], Sequence[int]]
#: A custom amount reader: ``(decoded JSON output) -> number``.
AmountReader = Callable[[Any], float]

#: The key number of an output without a key.
NO_KEY = -1


class OutputReader:
    """Reads one output's value (and message key) into ``(ids, key number, window start, window
    end, aggregate value)``; the arguments are :class:`~pytest_streamchaos.observe.collector.Collector`'s."""

    def __init__(self, id_reader: str | IdReader | None, key_field: str | None, window_field: str | None,
                 amount_field: str | AmountReader | None, what: str | None) -> None:
        if id_reader is not None and not (callable(id_reader) or isinstance(id_reader, str)):
            raise ValueError(f"id_reader must be None, a JSON field name or a callable, got {id_reader!r}")
        self._id_reader = id_reader
        self._what = what
        self._id_path = id_reader.split(".") if isinstance(id_reader, str) else None
        self._key_path = key_field.split(".") if key_field else None
        self._window_path = window_field.split(".") if window_field else None
        self._amount: list[str] | AmountReader | None = (
            amount_field.split(".") if isinstance(amount_field, str) else amount_field)

    @property
    def has_amount(self) -> bool:
        """True if outputs carry an aggregate value (``amount_field`` given)."""
        return self._amount is not None

    def read(self, value: bytes | None, mkey: bytes | None) -> tuple[list[int], int, float, float, float]:
        """(ids, key number, window start, window end, aggregate value) of one output."""
        if value is None:
            raise ValueError("tombstone (null value)")
        reader = self._id_reader
        obj: Any = None
        if callable(reader):
            ids = [int(i) for i in self._call_reader(reader, value, mkey)]
            try:
                obj = _loads(value)
            except _JSONError:
                obj = None  # custom formats need not be JSON; no key/window then
        else:
            obj = _loads(value)
            if not isinstance(obj, dict):
                raise ValueError(f"output is JSON but not an object: {type(obj).__name__}")
            aggregate_only = self._amount is not None and self._id_path is None and not ("id" in obj or "ids" in obj)
            ids = [] if aggregate_only else _ids_from(obj, self._id_path)
        if not isinstance(obj, dict):
            if self._amount is not None:
                raise ValueError("aggregate output is not a JSON object")
            return ids, key_number(mkey), np.nan, np.nan, np.nan
        return (ids, self._read_key(obj, mkey), *self._read_window(obj), self._read_amount(obj))

    def _call_reader(self, reader: IdReader, value: bytes, mkey: bytes | None) -> Sequence[int]:
        if self._what is None:  # the harness's own reader: an error is the output's
            return reader(value, mkey)
        try:
            return reader(value, mkey)
        except Exception as e:
            raise UserCodeError(f"{self._what} {name_of(reader)}", e,
                                f"output value {value[:80]!r}, key {mkey!r}") from e

    def _read_key(self, obj: dict, mkey: bytes | None) -> int:
        if self._key_path is not None:
            return key_number(_field(obj, self._key_path, None))
        key = key_number(obj.get("key", mkey))
        if key == NO_KEY and "key" in obj:
            key = key_number(mkey)
        return key

    def _read_window(self, obj: dict) -> tuple[float, float]:
        if self._window_path is None:
            return _window(obj)
        w = _field(obj, self._window_path, None)
        return (time_s(w.get("start")), time_s(w.get("end"))) if isinstance(w, dict) else (np.nan, np.nan)

    def _read_amount(self, obj: dict) -> float:
        amount = self._amount
        if amount is None:
            return np.nan
        if callable(amount):
            try:
                v = amount(obj)
            except Exception as e:
                raise UserCodeError(f"amount_field {name_of(amount)}", e, f"output {str(obj)[:80]}") from e
        else:
            v = _field(obj, amount, KeyError)
        if isinstance(v, bool) or not isinstance(v, (int, float, str)):
            raise ValueError(f"aggregate value is not a number: {v!r}")
        return float(v)


def _field(obj: Any, path: list[str], missing: object) -> Any:
    """``obj[path[0]][path[1]]...``; a missing step returns ``missing`` (or raises it, if an exception type)."""
    for part in path:
        if not isinstance(obj, dict) or part not in obj:
            if isinstance(missing, type) and issubclass(missing, Exception):
                raise ValueError(f"no field {'.'.join(path)!r}")
            return missing
        obj = obj[part]
    return obj


def _ids_from(obj: dict, path: list[str] | None) -> list[int]:
    if path is None:
        if "ids" in obj:
            v = obj["ids"]
        elif "id" in obj:
            v = obj["id"]
        else:
            raise ValueError("no `id` or `ids` field")
    else:
        v = obj
        for part in path:
            if not isinstance(v, dict) or part not in v:
                raise ValueError(f"no field {'.'.join(path)!r}")
            v = v[part]
    if isinstance(v, list):
        return [_as_id(i) for i in v]
    return [_as_id(v)]


def _as_id(v: object) -> int:
    if isinstance(v, bool):
        raise ValueError(f"id is a boolean: {v!r}")
    if isinstance(v, int):
        return v
    if isinstance(v, str) and v.lstrip("-").isdigit():
        return int(v)
    if isinstance(v, float) and v.is_integer():
        return int(v)
    raise ValueError(f"id is not an integer: {v!r}")


def key_number(k: object) -> int:
    """``"k17"`` / ``b"k17"`` / ``17`` -> 17; anything else -> :data:`NO_KEY`."""
    if isinstance(k, bytes):
        try:
            k = k.decode()
        except UnicodeDecodeError:
            return NO_KEY
    if isinstance(k, bool):
        return NO_KEY
    if isinstance(k, int):
        return k
    if isinstance(k, str):
        s = k[1:] if k.startswith("k") else k
        if s.isdigit():
            return int(s)
    return NO_KEY


def _window(obj: dict) -> tuple[float, float]:
    w = obj.get("window")
    if isinstance(w, dict):
        return time_s(w.get("start")), time_s(w.get("end"))
    if "window_start" in obj or "window_end" in obj:
        return time_s(obj.get("window_start")), time_s(obj.get("window_end"))
    return np.nan, np.nan


def time_s(v: object) -> float:
    """Epoch seconds from epoch ms (> 1e11), epoch seconds, or an ISO-8601 string (naive = UTC)."""
    if v is None or isinstance(v, bool):
        return np.nan
    if isinstance(v, (int, float)):
        return v / 1000.0 if abs(v) > 1e11 else float(v)
    if isinstance(v, str):
        try:
            return float(v) / 1000.0 if abs(float(v)) > 1e11 else float(v)
        except ValueError:
            pass
        iso = v.replace(" ", "T", 1)
        if iso.endswith("Z"):  # Spark's JSON stamps UTC as "Z", which fromisoformat reads only from Python 3.11
            iso = iso[:-1] + "+00:00"
        try:
            d = _dt.datetime.fromisoformat(iso)
        except ValueError:
            raise ValueError(f"unreadable window time {v!r}") from None
        if d.tzinfo is None:
            d = d.replace(tzinfo=_dt.timezone.utc)
        return d.timestamp()
    raise ValueError(f"unreadable window time {v!r}")
