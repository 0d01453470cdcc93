"""The harness's client of the cluster's API server: HTTPS with the admin certificate, JSON in and out, the
standard library only (the readiness waits and the faults need a few calls, not a client library)."""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any


class ApiError(RuntimeError):
    """The API server answered with an error status (``status``), or not at all (``status`` 0)."""

    def __init__(self, message: str, status: int = 0) -> None:
        super().__init__(message)
        self.status = status


class Api:
    """Calls to the API server at ``server`` (``https://host:port``), as the admin of ``pki``."""

    def __init__(self, server: str, pki: Path, timeout: float = 10.0) -> None:
        self.server, self.timeout = server, timeout
        self._ssl = ssl.create_default_context(cafile=str(pki / "ca.crt"))
        self._ssl.load_cert_chain(str(pki / "admin.crt"), str(pki / "admin.key"))

    def call(self, method: str, path: str, body: Any = None, content_type: str = "application/json") -> Any:
        """The JSON answer to ``method path`` (a text answer as text); :class:`ApiError` otherwise.
        ``content_type``: the body's (a ``PATCH`` names its kind: ``application/merge-patch+json``...)."""
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.server + path, data=data, method=method,
                                     headers={"Content-Type": content_type, "Accept": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=self.timeout, context=self._ssl) as resp:
                text = resp.read().decode()
        except urllib.error.HTTPError as exc:
            raise ApiError(f"{method} {path}: {exc.code} {exc.read().decode(errors='replace')[:300]}",
                           exc.code) from exc
        except (OSError, ValueError) as exc:
            raise ApiError(f"{method} {path}: {exc}") from exc
        try:
            return json.loads(text)
        except ValueError:
            return text

    def get(self, path: str) -> Any:
        return self.call("GET", path)

    def answers(self, path: str = "/readyz") -> bool:
        """Whether ``GET path`` answers 200 now."""
        try:
            self.get(path)
        except ApiError:
            return False
        return True

    def stream(self, path: str) -> Any:
        """``GET path`` as an open response to read as it comes (a pod's log with ``follow=true``); the caller
        closes it. No timeout: the API server ends it (the pod's container ended)."""
        req = urllib.request.Request(self.server + path, method="GET")
        try:
            return urllib.request.urlopen(req, context=self._ssl)  # noqa: S310  # https to our API server
        except urllib.error.HTTPError as exc:
            raise ApiError(f"GET {path}: {exc.code}", exc.code) from exc
        except OSError as exc:
            raise ApiError(f"GET {path}: {exc}") from exc
