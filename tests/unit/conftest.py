"""Fixtures of the unit tests."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest


@dataclass
class MavenRepo:
    """A Maven repository on 127.0.0.1 (``url``, with a final ``/``) serving ``files`` (path -> bytes);
    ``asked`` lists the paths requested, in order."""

    url: str
    files: dict[str, bytes] = field(default_factory=dict)
    asked: list[str] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)


@pytest.fixture
def maven_repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[MavenRepo]:
    """A :class:`MavenRepo` that ``STREAMCHAOS_MAVEN_REPO`` points at, and an empty plugin cache
    (``XDG_CACHE_HOME`` in ``tmp_path``). ``repo.stop.set()`` makes it answer nothing (404)."""
    repo = MavenRepo("")

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (the stdlib's name)
            path = self.path.lstrip("/")
            repo.asked.append(path)
            body = None if repo.stop.is_set() else repo.files.get(path)
            self.send_response(404 if body is None else 200)
            self.send_header("Content-Length", str(len(body or b"")))
            self.end_headers()
            self.wfile.write(body or b"")

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    repo.url = f"http://127.0.0.1:{server.server_address[1]}/"
    monkeypatch.setenv("STREAMCHAOS_MAVEN_REPO", repo.url)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    try:
        yield repo
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
