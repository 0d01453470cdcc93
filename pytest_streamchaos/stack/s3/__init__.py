"""The stack's S3-compatible object store (SeaweedFS, :mod:`.store`), its fault proxy (:mod:`.proxy`) and the
gate on S3A's renames (:mod:`.gate`): the ``s3`` checkpoint storage's service (docs/s3.md)."""

from pytest_streamchaos.events import Kind

#: the timeline kinds the object store records (its S3 faults): its storage entry's ``events``
KINDS = (Kind.S3_STORE_READY, Kind.S3_REQUESTS_REFUSED, Kind.S3A_LOGGED)
