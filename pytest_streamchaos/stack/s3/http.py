"""Just enough of HTTP/1.1 to relay S3 requests byte for byte: a message's head read off a socket, the
framing of its body (``Content-Length``, ``Transfer-Encoding: chunked``, or until the connection closes), and
the body relayed as it arrives. Nothing is parsed beyond the framing and nothing is rewritten: the SigV4
signature covers the headers (``Host`` included) and, for ``aws-chunked`` uploads, each chunk, so the bytes
the store gets are the bytes the client sent."""

from __future__ import annotations

import socket
from dataclasses import dataclass
from urllib.parse import parse_qsl, unquote, urlsplit

#: the longest message head relayed (S3's own limit on request headers is 8 KB)
MAX_HEAD = 64 * 1024
CHUNK = 64 * 1024


class Closed(Exception):
    """The peer closed the connection (before a whole message)."""


@dataclass(frozen=True)
class Head:
    """A request's or response's head: its first line, its headers (names lower-cased, for the framing only)
    and the exact bytes received (what is relayed)."""

    line: str
    headers: dict[str, str]
    raw: bytes

    @property
    def method(self) -> str:
        return self.line.split(" ", 1)[0].upper()

    @property
    def target(self) -> str:
        parts = self.line.split(" ")
        return parts[1] if len(parts) > 1 else "/"

    @property
    def status(self) -> int:
        """A response's status code (0 when the line has none)."""
        parts = self.line.split(" ")
        return int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0

    def header(self, name: str) -> str:
        return self.headers.get(name.lower(), "")

    @property
    def chunked(self) -> bool:
        return "chunked" in self.header("transfer-encoding").lower()

    @property
    def length(self) -> int | None:
        value = self.header("content-length").strip()
        return int(value) if value.isdigit() else None

    @property
    def keep_alive(self) -> bool:
        """Whether the connection stays open after this message (HTTP/1.1's default)."""
        conn = self.header("connection").lower()
        return "close" not in conn and not self.line.upper().startswith(("HTTP/1.0", "GET / HTTP/1.0"))

    def path_and_query(self) -> tuple[str, dict[str, str]]:
        """The request target's path (URL-decoded) and query parameters (a key without a value: '')."""
        url = urlsplit(self.target)
        return unquote(url.path), dict(parse_qsl(url.query, keep_blank_values=True))


class Reader:
    """A socket read in messages: heads up to their blank line, bodies by their framing (what was read past
    a head is kept for the body)."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buf = b""

    def _more(self) -> bytes:
        data = self.sock.recv(CHUNK)
        if not data:
            raise Closed()
        return data

    def head(self) -> Head:
        """The next message's head; :class:`Closed` when the peer closed before one (between messages)."""
        while b"\r\n\r\n" not in self.buf:
            if len(self.buf) > MAX_HEAD:
                raise ValueError(f"a message head longer than {MAX_HEAD} bytes")
            self.buf += self._more()
        raw, self.buf = self.buf.split(b"\r\n\r\n", 1)
        lines = raw.decode("latin-1").split("\r\n")
        headers: dict[str, str] = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        return Head(lines[0], headers, raw + b"\r\n\r\n")

    def relay_exactly(self, n: int, out: socket.socket | None) -> None:
        """Relay (or, ``out`` None, drop) the next ``n`` bytes."""
        while n > 0:
            if not self.buf:
                self.buf = self._more()
            part, self.buf = self.buf[:n], self.buf[n:]
            if out is not None:
                out.sendall(part)
            n -= len(part)

    def _line(self, out: socket.socket | None) -> bytes:
        while b"\r\n" not in self.buf:
            self.buf += self._more()
        line, self.buf = self.buf.split(b"\r\n", 1)
        if out is not None:
            out.sendall(line + b"\r\n")
        return line

    def relay_chunked(self, out: socket.socket | None) -> None:
        """Relay a chunked body as it is: each chunk's size line, data and CRLF, the last chunk and trailers."""
        while True:
            size = int(self._line(out).split(b";", 1)[0].strip() or b"0", 16)
            if size == 0:
                while self._line(out):  # trailers, up to the blank line
                    pass
                return
            self.relay_exactly(size + 2, out)  # the data and its CRLF

    def relay_to_close(self, out: socket.socket | None) -> None:
        """Relay everything until the peer closes (a response framed by the connection's end)."""
        if self.buf and out is not None:
            out.sendall(self.buf)
        self.buf = b""
        while True:
            data = self.sock.recv(CHUNK)
            if not data:
                return
            if out is not None:
                out.sendall(data)


def has_body(request: Head, response: Head | None = None) -> bool:
    """Whether the message has a body: a request's when framed; a response's unless it answers a HEAD or is
    1xx / 204 / 304."""
    if response is None:
        return request.chunked or bool(request.length)
    return not (request.method == "HEAD" or response.status < 200 or response.status in (204, 304))


def relay_body(reader: Reader, head: Head, out: socket.socket | None, request: Head | None = None) -> bool:
    """Relay the body of the message ``head`` (a response when ``request`` is given); whether the connection
    can carry another message (False: the body was framed by the connection's end)."""
    if request is not None and not has_body(request, head):
        return True
    if head.chunked:
        reader.relay_chunked(out)
    elif head.length is not None:
        reader.relay_exactly(head.length, out)
    elif request is not None:
        reader.relay_to_close(out)
        return False
    return True


def alive(sock: socket.socket) -> bool:
    """Whether the peer of ``sock`` has not closed it (a read would not see the end)."""
    try:
        sock.setblocking(False)
        try:
            return sock.recv(1, socket.MSG_PEEK) != b""
        except BlockingIOError:
            return True
        finally:
            sock.setblocking(True)
    except OSError:
        return False
