"""The stack's S3-compatible object store (SeaweedFS, :mod:`.store`), its fault proxy (:mod:`.proxy`) and the
gate on S3A's renames (:mod:`.gate`): the ``s3`` checkpoint storage's service (docs/s3.md); what the job's S3A did
about a fault of the store is :mod:`.check`'s.

This package's face holds only the object store's timeline kinds (what its storage entry's ``events`` names, what
the S3 faults record and the check reads), held by the timeline as soon as it is imported: the faults may import
it, as they import the stack's interface."""

from pytest_streamchaos.events import Reaction, StrEnum, add_kinds


class S3Kind(StrEnum):
    """What the object store and its faults record on a run's timeline."""

    #: its S3 gateway answers again after a restart
    S3_STORE_READY = "s3_store_ready"
    #: what its proxy refused, by operation, and how many of those the job's S3A sent again
    S3_REQUESTS_REFUSED = "s3_requests_refused"
    #: what the job's driver log said of S3 while a fault of the store acted (its S3A / AWS SDK lines)
    S3A_LOGGED = "s3a_logged"


#: the object store's timeline kinds and what each says of a fault: its storage entry's ``events``
KINDS = {S3Kind.S3_STORE_READY: Reaction.HEALING, S3Kind.S3_REQUESTS_REFUSED: None, S3Kind.S3A_LOGGED: None}
add_kinds(KINDS)  # held whenever the store is in use, a session of the plugin or not
