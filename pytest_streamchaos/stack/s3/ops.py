"""What an S3 request is, read from its method, path, query and the ``x-amz-copy-source`` header (path-style
addressing: ``/<bucket>/<key>``), and what S3 answers when it refuses one: pure, no I/O.

The operations, as the ``s3_errors`` fault names them (:data:`OPS`): ``PUT`` (PutObject, UploadPart),
``COPY`` (CopyObject, UploadPartCopy: S3A's rename is a COPY and a DELETE), ``GET`` (GetObject), ``HEAD``
(HeadObject, HeadBucket), ``LIST`` (ListObjects(V2), ListBuckets, ListMultipartUploads), ``DELETE``
(DeleteObject, and DeleteObjects: a POST ``?delete``), ``MULTIPART`` (CreateMultipartUpload,
CompleteMultipartUpload, AbortMultipartUpload).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from xml.sax.saxutils import escape

OPS = ("PUT", "COPY", "GET", "HEAD", "LIST", "DELETE", "MULTIPART")
#: the S3 error code of each status the fault answers with (S3's own, from its error responses)
CODES = {400: "BadRequest", 403: "AccessDenied", 404: "NoSuchKey", 409: "OperationAborted", 429: "SlowDown",
         500: "InternalError", 502: "BadGateway", 503: "SlowDown", 504: "GatewayTimeout"}
MESSAGES = {"SlowDown": "Please reduce your request rate.",
            "InternalError": "We encountered an internal error. Please try again."}


@dataclass(frozen=True)
class Request:
    """One S3 request as the proxy classifies it."""

    op: str  #: a name of :data:`OPS`
    method: str
    bucket: str
    key: str
    query: Mapping[str, str]
    copy_source: str = ""  #: ``<bucket>/<key>`` of a COPY's source (URL-decoded, without the leading ``/``)

    @property
    def what(self) -> str:
        """``PUT lake/orders/_delta_log/00000000000000000003.json``: for messages."""
        return f"{self.op} {self.bucket}/{self.key}" if self.key else f"{self.op} {self.bucket or '/'}"


def classify(method: str, path: str, query: Mapping[str, str], copy_source: str = "") -> Request:
    """The S3 operation of a request (see the module docstring); ``path`` URL-decoded."""
    method = method.upper()
    bucket, _, key = path.lstrip("/").partition("/")
    source = copy_source.split("?", 1)[0].lstrip("/")
    if method == "PUT":
        op = "COPY" if copy_source else "PUT"
    elif method == "GET":
        op = "LIST" if not key or "uploads" in query else "GET"
    elif method == "HEAD":
        op = "HEAD"
    elif method == "DELETE":
        op = "MULTIPART" if "uploadId" in query else "DELETE"
    elif method == "POST":
        op = "DELETE" if "delete" in query else "MULTIPART"
    else:
        op = method
    return Request(op, method, bucket, key, dict(query), source)


def error_body(code: str, resource: str) -> bytes:
    """S3's XML error document for ``code``."""
    message = MESSAGES.get(code, code)
    return (f'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{escape(code)}</Code><Message>{escape(message)}'
            f"</Message><Resource>{escape(resource)}</Resource><RequestId>{uuid.uuid4().hex[:16].upper()}"
            "</RequestId></Error>").encode()


def error_response(status: int, code: str, resource: str, close: bool) -> bytes:
    """A whole HTTP response refusing a request with ``status`` and S3's ``code``."""
    body = error_body(code, resource)
    reason = {503: "Service Unavailable", 500: "Internal Server Error"}.get(status, code)
    head = (f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/xml\r\nContent-Length: {len(body)}\r\n"
            f"x-amz-request-id: {uuid.uuid4().hex[:16].upper()}\r\n"
            f"{'Connection: close' if close else 'Connection: keep-alive'}\r\n\r\n")
    return head.encode() + body


# -- bucket names ------------------------------------------------------------------------------------------

#: what S3 accepts as a bucket name (general purpose buckets)
_BUCKET = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")
_IP = re.compile(r"\d+\.\d+\.\d+\.\d+")


def bucket_refusal(name: str) -> str | None:
    """Why S3 refuses ``name`` as a bucket name (one clause), None when it takes it."""
    if not 3 <= len(name) <= 63:
        return f"it is {len(name)} characters long (S3 takes 3 to 63)"
    bad = sorted({c for c in name if not (c.islower() or c.isdigit() or c in ".-")})
    if bad:
        return f"it has {''.join(bad)!r} (S3 takes lowercase letters, digits, '.' and '-')"
    if not _BUCKET.fullmatch(name):
        return "it must begin and end with a lowercase letter or a digit"
    if ".." in name or ".-" in name or "-." in name:
        return "it has two periods, or a period beside a hyphen, in a row"
    if _IP.fullmatch(name):
        return "it is formatted as an IP address"
    if name.startswith(("xn--", "sthree-")) or name.endswith(("-s3alias", "--ol-s3")):
        return "it uses a prefix or suffix S3 reserves (xn--, sthree-, -s3alias, --ol-s3)"
    return None


def bucket_of(url: str) -> str:
    """The bucket of an ``s3a://bucket/key`` URL ("" when it has none)."""
    rest = url.split("://", 1)[1] if "://" in url else ""
    return rest.split("/", 1)[0]
