"""Pure-Python core of the live view (no rclpy): bind and token rules, the page's command
messages and their limits, image downscaling and PNG encoding, the overhead map's frame and
the placement of object labels that never overlap, and a small 2-D transform tree.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import math
import struct
import zlib
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

#: the largest WebSocket message the page may send, bytes (a Fetch goal is ~100)
MAX_MESSAGE_BYTES = 4096
#: the longest Fetch request accepted, characters
MAX_QUERY_CHARS = 200
#: what the page may send: a Fetch goal and a cancel, nothing else
COMMAND_OPS = ("fetch", "cancel")


# ------------------------------------------------------------------------------ security
def is_loopback(host: str) -> bool:
    """True for a loopback address or ``localhost``; False for every other host (``0.0.0.0`` too)."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip()).is_loopback
    except ValueError:
        return False


def check_bind(host: str, token: str) -> None:
    """Raise ValueError unless the bind is allowed: loopback always; any other host only with a
    token of at least 16 characters given at start."""
    if not host or not host.strip():
        raise ValueError("host is empty: give an address to bind, e.g. 127.0.0.1")
    if is_loopback(host):
        return
    if len(token or "") < 16:
        raise ValueError(f"binding {host} (not loopback) needs a token of at least 16 characters "
                         f"(parameter token); the page is then opened with ?token=<token>")


def token_ok(given: Optional[str], expected: str) -> bool:
    """Whether a request's token matches (constant-time). With no token configured every request
    passes: the server is on loopback then."""
    if not expected:
        return True
    return hmac.compare_digest((given or "").encode(), expected.encode())


class BadMessage(ValueError):
    """A refused WebSocket message; ``kind`` is the counter it goes to."""

    def __init__(self, kind: str, text: str) -> None:
        super().__init__(text)
        self.kind = kind


def parse_command(raw: bytes, max_bytes: int = MAX_MESSAGE_BYTES,
                  max_query_chars: int = MAX_QUERY_CHARS) -> Tuple[str, Optional[str]]:
    """Parse one message of the page: ``{"op": "fetch", "query": "the red ball"}`` or
    ``{"op": "cancel"}``. Returns (op, query or None); raises BadMessage for anything else."""
    if len(raw) > max_bytes:
        raise BadMessage("oversized", f"message of {len(raw)} bytes (limit {max_bytes})")
    try:
        msg = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise BadMessage("malformed", "not JSON text") from None
    if not isinstance(msg, dict):
        raise BadMessage("malformed", "not a JSON object")
    op = msg.get("op")
    if op not in COMMAND_OPS:
        raise BadMessage("unknown_op", f"op {str(op)[:40]!r} is not one of {', '.join(COMMAND_OPS)}")
    if set(msg) - {"op", "query"}:
        raise BadMessage("malformed", f"unexpected fields {sorted(set(msg) - {'op', 'query'})[:5]}")
    if op == "cancel":
        return "cancel", None
    query = msg.get("query")
    if not isinstance(query, str) or not query.strip():
        raise BadMessage("malformed", "fetch needs a non-empty query string")
    query = " ".join(query.split())
    if len(query) > max_query_chars:
        raise BadMessage("oversized", f"query of {len(query)} characters (limit {max_query_chars})")
    if any(ord(c) < 32 for c in query):
        raise BadMessage("malformed", "control characters in the query")
    return "fetch", query


@dataclass
class Counters:
    """Refused messages by kind, and the totals the page and the tests read."""

    refused: Dict[str, int] = field(default_factory=dict)
    accepted: int = 0

    def refuse(self, kind: str) -> None:
        self.refused[kind] = self.refused.get(kind, 0) + 1


# ------------------------------------------------------------------------------ images
def downscale(rgb: np.ndarray, max_width: int) -> np.ndarray:
    """Shrink an HxWx3 image by an integer factor (block mean) to at most ``max_width`` pixels wide."""
    if rgb.ndim != 3 or rgb.shape[2] != 3:
        raise ValueError(f"expected an HxWx3 image, got shape {rgb.shape}")
    h, w = rgb.shape[:2]
    k = max(1, math.ceil(w / max(1, max_width)))
    if k == 1:
        return np.ascontiguousarray(rgb, dtype=np.uint8)
    hh, ww = h // k, w // k
    blocks = rgb[:hh * k, :ww * k].reshape(hh, k, ww, k, 3).astype(np.uint16)
    return (blocks.sum(axis=(1, 3)) // (k * k)).astype(np.uint8)


def encode_png(pixels: np.ndarray, level: int = 1) -> bytes:
    """PNG bytes of an HxW (grey) or HxWx3 (RGB) uint8 image (zlib only; level 1 keeps it cheap)."""
    img = np.ascontiguousarray(pixels, dtype=np.uint8)
    if img.ndim == 2:
        colour, channels = 0, 1
    elif img.ndim == 3 and img.shape[2] == 3:
        colour, channels = 2, 3
    else:
        raise ValueError(f"expected HxW or HxWx3, got shape {img.shape}")
    h, w = img.shape[:2]
    rows = np.zeros((h, 1 + w * channels), dtype=np.uint8)   # filter byte 0 per row
    rows[:, 1:] = img.reshape(h, w * channels)

    def chunk(tag: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", w, h, 8, colour, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows.tobytes(), level))
            + chunk(b"IEND", b""))


def image_to_rgb(encoding: str, height: int, width: int, step: int, data: bytes) -> np.ndarray:
    """A sensor_msgs/Image's pixels as HxWx3 RGB; ValueError for encodings the view does not show."""
    enc = encoding.lower()
    channels = {"rgb8": 3, "bgr8": 3, "rgba8": 4, "bgra8": 4, "mono8": 1}.get(enc)
    if channels is None:
        raise ValueError(f"image encoding {encoding!r} is not shown (rgb8, bgr8, rgba8, bgra8, mono8)")
    if height <= 0 or width <= 0 or step < width * channels or len(data) < step * height:
        raise ValueError(f"image of {width}x{height}, step {step}, has {len(data)} bytes")
    buf = np.frombuffer(data, dtype=np.uint8, count=step * height).reshape(height, step)[:, :width * channels]
    px = buf.reshape(height, width, channels)
    if channels == 1:
        return np.repeat(px, 3, axis=2)
    if enc.startswith("bgr"):
        return px[:, :, 2::-1]
    return px[:, :, :3]


def occupancy_to_grey(data: Sequence[int], width: int, height: int) -> np.ndarray:
    """An OccupancyGrid's cells as a grey image, north up: free white, occupied black, unknown grey."""
    if width <= 0 or height <= 0 or len(data) != width * height:
        raise ValueError(f"grid of {width}x{height} has {len(data)} cells")
    cells = np.asarray(data, dtype=np.int16).reshape(height, width)
    grey = np.where(cells < 0, 160, 255 - (np.clip(cells, 0, 100) * 255 // 100)).astype(np.uint8)
    return grey[::-1]   # row 0 of the grid is at the origin (bottom), row 0 of an image is the top


# ------------------------------------------------------------------------------ overhead map
@dataclass(frozen=True)
class MapFrame:
    """How map coordinates become pixels of the overhead view: the grid's origin and resolution,
    scaled by ``scale`` pixels per cell; y points up in the map and down in the image."""

    origin_x: float
    origin_y: float
    resolution: float
    width: int      # cells
    height: int     # cells
    scale: float = 1.0

    @property
    def size_px(self) -> Tuple[int, int]:
        return int(round(self.width * self.scale)), int(round(self.height * self.scale))

    def to_px(self, x: float, y: float) -> Tuple[float, float]:
        u = (x - self.origin_x) / self.resolution * self.scale
        v = (self.height - (y - self.origin_y) / self.resolution) * self.scale
        return u, v


Box = Tuple[float, float, float, float]   # x0, y0, x1, y1 (pixels)


def _overlaps(a: Box, b: Box) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def label_box(text: str, x: float, y: float, char_w: float = 7.0, line_h: float = 14.0) -> Box:
    """The box a label of ``text`` takes with its top-left corner at (x, y)."""
    return x, y, x + char_w * len(text) + 4.0, y + line_h


def place_labels(anchors: Sequence[Tuple[float, float]], texts: Sequence[str], bounds: Tuple[float, float],
                 char_w: float = 7.0, line_h: float = 14.0, marker_r: float = 4.0,
                 keep_clear: Sequence[Box] = ()) -> List[Optional[Tuple[float, float]]]:
    """Top-left corners for labels of objects drawn at ``anchors`` (pixels) so that no two labels
    overlap, no label covers an object's marker or a ``keep_clear`` box (the robot), and every
    label stays inside ``bounds`` (w, h).

    Greedy: each label tries positions around its object, nearest first, out to a few rings; a
    label with no free place gets None (the page lists it beside the map instead of drawing it on
    top of another). Objects are placed in the order given."""
    w_max, h_max = bounds
    markers = [(ax - marker_r, ay - marker_r, ax + marker_r, ay + marker_r) for ax, ay in anchors] + list(keep_clear)
    placed: List[Box] = []
    out: List[Optional[Tuple[float, float]]] = []
    for i, ((ax, ay), text) in enumerate(zip(anchors, texts)):
        tw = char_w * len(text) + 4.0
        choice = None
        for ring in (1.0, 2.0, 3.0, 4.5):
            d = (marker_r + 2.0) * ring
            candidates = [(ax + d, ay - line_h / 2), (ax - d - tw, ay - line_h / 2), (ax - tw / 2, ay - d - line_h),
                          (ax - tw / 2, ay + d), (ax + d, ay - d - line_h), (ax - d - tw, ay - d - line_h),
                          (ax + d, ay + d), (ax - d - tw, ay + d)]
            for x, y in candidates:
                box = label_box(text, x, y, char_w, line_h)
                if box[0] < 0 or box[1] < 0 or box[2] > w_max or box[3] > h_max:
                    continue
                if any(_overlaps(box, p) for p in placed) or any(_overlaps(box, m) for m in markers):
                    continue
                choice = (x, y)
                placed.append(box)
                break
            if choice is not None:
                break
        out.append(choice)
    return out


# ------------------------------------------------------------------------------ transforms
def yaw_of(qx: float, qy: float, qz: float, qw: float) -> float:
    return math.atan2(2.0 * (qw * qz + qx * qy), 1.0 - 2.0 * (qy * qy + qz * qz))


class TfTree2D:
    """The planar part of /tf and /tf_static (x, y, yaw per child frame), enough to place the
    robot on the map: ``lookup("map", "base_link")`` composes the chain of parents."""

    def __init__(self) -> None:
        self._edges: Dict[str, Tuple[str, float, float, float]] = {}

    def set(self, parent: str, child: str, x: float, y: float, yaw: float) -> None:
        parent, child = parent.lstrip("/"), child.lstrip("/")
        if parent == child or not all(math.isfinite(v) for v in (x, y, yaw)):
            return
        self._edges[child] = (parent, x, y, yaw)

    def lookup(self, target: str, source: str, max_depth: int = 16) -> Optional[Tuple[float, float, float]]:
        """Pose (x, y, yaw) of ``source`` in ``target``, or None where the chain does not reach it."""
        x, y, yaw = 0.0, 0.0, 0.0
        frame = source
        for _ in range(max_depth):
            if frame == target:
                return x, y, yaw
            edge = self._edges.get(frame)
            if edge is None:
                return None
            parent, ex, ey, eyaw = edge
            c, s = math.cos(eyaw), math.sin(eyaw)
            x, y, yaw = ex + c * x - s * y, ey + s * x + c * y, eyaw + yaw
            frame = parent
        return None


def parse_tf_cdr(raw: bytes) -> List[Tuple[str, str, float, float, float, float, float, float, float]]:
    """The transforms of a serialised tf2_msgs/TFMessage (CDR, as a raw subscription gets it):
    (parent, child, x, y, z, qx, qy, qz, qw) each, read with ``struct`` (no message objects: about
    fifty times cheaper than deserialising a robot_state_publisher message of twenty links).
    ValueError for bytes that are not such a message."""
    if len(raw) < 8 or raw[0] != 0 or raw[1] not in (0, 1):
        raise ValueError("not a CDR message")
    e = "<" if raw[1] == 1 else ">"
    body = memoryview(raw)[4:]
    n = len(body)
    pos = 0

    def align(k: int) -> None:
        nonlocal pos
        pos += (-pos) % k

    def u32() -> int:
        nonlocal pos
        align(4)
        if pos + 4 > n:
            raise ValueError("truncated")
        v = struct.unpack_from(e + "I", body, pos)[0]
        pos += 4
        return v

    def string() -> str:
        nonlocal pos
        ln = u32()
        if ln == 0 or pos + ln > n:
            raise ValueError("bad string")
        v = bytes(body[pos:pos + ln - 1]).decode("utf-8", "replace")
        pos += ln
        return v

    count = u32()
    if count > 10000:
        raise ValueError(f"{count} transforms")
    out = []
    for _ in range(count):
        u32()
        u32()                     # stamp
        parent, child = string(), string()
        align(8)
        if pos + 56 > n:
            raise ValueError("truncated")
        vals = struct.unpack_from(e + "7d", body, pos)
        pos += 56
        out.append((parent, child) + vals)
    return out
