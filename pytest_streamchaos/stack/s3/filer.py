"""Removing from the object store as S3 would: SeaweedFS's filer has real folders, and once the objects under a
key are deleted the emptied folder stays -- a listing of its prefix answers it as an object ``<key>/``, which S3
never does. S3A then takes it for a directory, and a Delta table removed object by object is found again with
no commit (the next run's ``DeltaTable.createIfNotExists`` failed with ``DELTA_TABLE_NOT_FOUND``). The harness
removes through the filer's HTTP API instead (``/buckets/<bucket>/<key>``), folders included.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from urllib.parse import quote


def remove(filer: str, path: str) -> None:
    """Everything under ``<bucket>/<key>`` on the store whose filer is at ``filer`` (``http://host:port``) gone,
    the emptied folders too; ``path`` a bucket's name: all the bucket holds, the bucket kept. Nothing there:
    nothing to do."""
    bucket, _, key = path.strip("/").partition("/")
    for name in [key] if key else names(filer, bucket):
        _delete(filer, f"{bucket}/{name}")


def names(filer: str, bucket: str) -> list[str]:
    """The names at the top of ``bucket`` (objects and folders), from the filer's listing."""
    found: list[str] = []
    last = ""
    while True:
        req = urllib.request.Request(f"{filer}/buckets/{quote(bucket)}/?limit=1000&lastFileName={quote(last)}",
                                     headers={"Accept": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                listing = json.loads(r.read() or b"{}")
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                return found
            raise OSError(f"the object store did not list bucket {bucket}: HTTP {exc.code}") from None
        entries = listing.get("Entries") or []
        found += [str(e["FullPath"]).rsplit("/", 1)[-1] for e in entries]
        if not listing.get("ShouldDisplayLoadMore") or not entries:
            return found
        last = found[-1]


def _delete(filer: str, path: str) -> None:
    req = urllib.request.Request(f"{filer}/buckets/{quote(path)}?recursive=true&ignoreRecursiveError=true",
                                 method="DELETE")
    try:
        urllib.request.urlopen(req, timeout=30).close()
    except urllib.error.HTTPError as exc:
        if exc.code != 404:
            raise OSError(f"the object store did not delete {path}: HTTP {exc.code}") from None
