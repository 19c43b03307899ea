"""The page's HTTP and WebSocket server (standard library only, no rclpy).

``GET /`` serves the built-in page (one HTML file, inline JS and CSS); ``GET /ws`` upgrades to a
WebSocket (RFC 6455) on which the server pushes JSON state and camera frames, and the page sends
only ``{"op": "fetch", "query": ...}`` and ``{"op": "cancel"}``. With a token configured every
request must carry ``?token=<token>``. Malformed, oversized or unknown messages are refused and
counted; a client that sends a frame over the limit, or breaks the framing, is disconnected.
"""

from __future__ import annotations

import base64
import hashlib
import json
import socket
import struct
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Callable, Dict, List, Optional
from urllib.parse import parse_qs, urlparse

from .core import MAX_MESSAGE_BYTES, BadMessage, Counters, check_bind, parse_command, token_ok

WS_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
PAGE = Path(__file__).with_name("page.html")


def accept_key(key: str) -> str:
    return base64.b64encode(hashlib.sha1((key + WS_GUID).encode()).digest()).decode()


def encode_frame(payload: bytes, opcode: int = 0x1) -> bytes:
    """One unmasked server frame (FIN set)."""
    n = len(payload)
    if n < 126:
        head = struct.pack("!BB", 0x80 | opcode, n)
    elif n < 1 << 16:
        head = struct.pack("!BBH", 0x80 | opcode, 126, n)
    else:
        head = struct.pack("!BBQ", 0x80 | opcode, 127, n)
    return head + payload


class FrameError(Exception):
    def __init__(self, kind: str, text: str) -> None:
        super().__init__(text)
        self.kind = kind


def _read_exact(rfile, n: int) -> bytes:
    data = rfile.read(n)
    if data is None or len(data) < n:
        raise EOFError
    return data


def read_message(rfile, max_bytes: int) -> tuple[int, bytes]:
    """Read one client message (fragments joined). Returns (opcode, payload). Raises FrameError
    for an unmasked, reserved-bit or oversized frame (the connection is then closed), EOFError
    when the peer has gone."""
    opcode, parts, total = None, [], 0
    while True:
        b0, b1 = _read_exact(rfile, 2)
        fin, rsv, op = b0 & 0x80, b0 & 0x70, b0 & 0x0F
        masked, n = b1 & 0x80, b1 & 0x7F
        if rsv:
            raise FrameError("malformed", "reserved bits set")
        if not masked:
            raise FrameError("malformed", "client frame not masked")
        if n == 126:
            n = struct.unpack("!H", _read_exact(rfile, 2))[0]
        elif n == 127:
            n = struct.unpack("!Q", _read_exact(rfile, 8))[0]
        if op >= 0x8:   # control frame: ping, pong, close (at most 125 bytes, never fragmented)
            if n > 125 or not fin:
                raise FrameError("malformed", "bad control frame")
            mask = _read_exact(rfile, 4)
            payload = bytes(b ^ mask[i % 4] for i, b in enumerate(_read_exact(rfile, n)))
            return op, payload
        if total + n > max_bytes:
            raise FrameError("oversized", f"message over {max_bytes} bytes")
        mask = _read_exact(rfile, 4)
        data = bytearray(_read_exact(rfile, n))
        for i in range(len(data)):
            data[i] ^= mask[i % 4]
        if opcode is None:
            if op == 0x0:
                raise FrameError("malformed", "continuation without a first frame")
            opcode = op
        elif op != 0x0:
            raise FrameError("malformed", "new message inside a fragmented one")
        parts.append(bytes(data))
        total += n
        if fin:
            return opcode, b"".join(parts)


class _Client:
    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.lock = threading.Lock()
        self.alive = True

    def send(self, payload: bytes, opcode: int = 0x1) -> bool:
        with self.lock:
            if not self.alive:
                return False
            try:
                self.sock.sendall(encode_frame(payload, opcode))
                return True
            except OSError:
                self.alive = False
                return False


class ViewServer:
    """Serves the page and its WebSocket. ``on_command(op, query)`` is called from a server thread
    for every accepted message and returns the reply (a dict, sent back as JSON to that client)."""

    def __init__(self, host: str, port: int, token: str,
                 on_command: Callable[[str, Optional[str]], Dict],
                 max_message_bytes: int = MAX_MESSAGE_BYTES, max_query_chars: int = 200,
                 max_clients: int = 8, send_timeout_s: float = 2.0) -> None:
        check_bind(host, token)
        self.token = token or ""
        self.on_command = on_command
        self.max_message_bytes, self.max_query_chars = max_message_bytes, max_query_chars
        self.max_clients, self.send_timeout_s = max_clients, send_timeout_s
        self.counters = Counters()
        self.counter_lock = threading.Lock()
        self.clients: List[_Client] = []
        self.clients_lock = threading.Lock()
        self.page = PAGE.read_bytes()
        self.httpd = ThreadingHTTPServer((host, port), self._handler_class())
        self.httpd.daemon_threads = True
        self.thread: Optional[threading.Thread] = None

    @property
    def port(self) -> int:
        return self.httpd.server_address[1]

    def start(self) -> None:
        self.thread = threading.Thread(target=self.httpd.serve_forever, name="live-view-http", daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        with self.clients_lock:
            clients, self.clients = self.clients, []
        for c in clients:
            c.alive = False
            try:
                c.sock.close()
            except OSError:
                pass

    def client_count(self) -> int:
        with self.clients_lock:
            return len(self.clients)

    def refuse(self, kind: str) -> None:
        with self.counter_lock:
            self.counters.refuse(kind)

    def stats(self) -> Dict:
        with self.counter_lock:
            return {"refused": dict(self.counters.refused), "accepted": self.counters.accepted}

    def broadcast(self, obj: Dict) -> int:
        """Send ``obj`` as JSON to every connected page; returns how many got it."""
        payload = json.dumps(obj, separators=(",", ":")).encode()
        with self.clients_lock:
            clients = list(self.clients)
        sent = 0
        for c in clients:
            if c.send(payload):
                sent += 1
            else:
                self._drop(c)
        return sent

    def _drop(self, client: _Client) -> None:
        with self.clients_lock:
            if client in self.clients:
                self.clients.remove(client)
        client.alive = False

    # ------------------------------------------------------------------ HTTP handler
    def _handler_class(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            server_version = "rlstack-live-view"

            def log_message(self, *_args) -> None:   # quiet: the node logs what matters
                pass

            def _plain(self, code: int, text: str) -> None:
                body = (text + "\n").encode()
                self.send_response(code)
                self.send_header("Content-Type", "text/plain; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.write(body)
                self.close_connection = True

            def do_GET(self) -> None:
                url = urlparse(self.path)
                given = parse_qs(url.query).get("token", [None])[0]
                if not token_ok(given, server.token):
                    server.refuse("bad_token")
                    self._plain(403, "forbidden: open the page with ?token=<the token the view was started with>")
                    return
                if url.path in ("/", "/index.html"):
                    self.send_response(200)
                    self.send_header("Content-Type", "text/html; charset=utf-8")
                    self.send_header("Content-Length", str(len(server.page)))
                    self.send_header("Cache-Control", "no-store")
                    self.send_header("Content-Security-Policy",
                                     "default-src 'self'; img-src 'self' data: blob:; style-src 'unsafe-inline'; "
                                     "script-src 'unsafe-inline'; connect-src 'self' ws: wss:")
                    self.end_headers()
                    self.wfile.write(server.page)
                elif url.path == "/ws":
                    self._websocket()
                else:
                    self._plain(404, "not found")

            def do_POST(self) -> None:
                server.refuse("http_method")
                self._plain(405, "the page sends commands over its WebSocket only")

            do_PUT = do_DELETE = do_PATCH = do_POST

            def _websocket(self) -> None:
                key = self.headers.get("Sec-WebSocket-Key")
                if self.headers.get("Upgrade", "").lower() != "websocket" or not key:
                    server.refuse("malformed")
                    self._plain(400, "expected a WebSocket upgrade")
                    return
                origin = self.headers.get("Origin")
                if origin and urlparse(origin).netloc != self.headers.get("Host", ""):
                    server.refuse("bad_origin")   # another site's page in the user's browser
                    self._plain(403, "forbidden: cross-origin WebSocket")
                    return
                if server.client_count() >= server.max_clients:
                    server.refuse("too_many_clients")
                    self._plain(503, f"at most {server.max_clients} pages at once")
                    return
                self.send_response(101)
                self.send_header("Upgrade", "websocket")
                self.send_header("Connection", "Upgrade")
                self.send_header("Sec-WebSocket-Accept", accept_key(key))
                self.end_headers()
                self.wfile.flush()
                self.connection.settimeout(None)
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)
                client = _Client(self.connection)
                # a page that stops reading is dropped instead of blocking the broadcaster
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO,
                                           struct.pack("ll", int(server.send_timeout_s), 0))
                with server.clients_lock:
                    server.clients.append(client)
                client.send(json.dumps({"type": "hello", **server.stats()}).encode())
                try:
                    self._serve(client)
                finally:
                    server._drop(client)
                    self.close_connection = True

            def _serve(self, client: _Client) -> None:
                while client.alive:
                    try:
                        op, payload = read_message(self.rfile, server.max_message_bytes)
                    except FrameError as exc:
                        server.refuse(exc.kind)
                        client.send(struct.pack("!H", 1009 if exc.kind == "oversized" else 1002), 0x8)
                        return
                    except (EOFError, OSError, ValueError):
                        return
                    if op == 0x8:   # close
                        client.send(payload[:2], 0x8)
                        return
                    if op == 0x9:   # ping
                        client.send(payload, 0xA)
                        continue
                    if op == 0xA:
                        continue
                    if op != 0x1:
                        server.refuse("malformed")
                        client.send(json.dumps({"type": "refused",
                                                "reason": "binary messages are not accepted"}).encode())
                        continue
                    try:
                        cmd, query = parse_command(payload, server.max_message_bytes, server.max_query_chars)
                    except BadMessage as exc:
                        server.refuse(exc.kind)
                        client.send(json.dumps({"type": "refused", "reason": str(exc)}).encode())
                        continue
                    with server.counter_lock:
                        server.counters.accepted += 1
                    try:
                        reply = server.on_command(cmd, query)
                    except Exception as exc:  # noqa: BLE001 -- a command's failure is told, never fatal
                        reply = {"type": "error", "reason": f"{type(exc).__name__}: {exc}"}
                    client.send(json.dumps(reply).encode())

        return Handler
