"""Read and write maps in the standard ROS format (YAML + PGM), as map_server reads them.

YAML keys (nav2_map_server / ROS 1 map_server):

* ``image``: the image file, absolute or relative to the YAML file's folder (PGM P5/P2 here)
* ``resolution``: metres per pixel
* ``origin``: ``[x, y, yaw]`` of the lower-left pixel in the map frame (yaw counter-clockwise)
* ``negate``: 0/1; 0: ``p = (255 - x) / 255`` (black = occupied), 1: ``p = x / 255``
* ``occupied_thresh``: ``p >= occupied_thresh`` -> 100 (occupied)
* ``free_thresh``: ``p <= free_thresh`` -> 0 (free)
* ``mode``: ``trinary`` (default; in between -> -1 unknown), ``scale`` (in between ->
  ``round(99 * (p - free) / (occ - free))``), ``raw`` (value = pixel, >= 101 -> unknown)

Comparisons are inclusive, as in nav2_map_server's ``loadMapFromFile`` (ROS 2). The image's
first row is the map's top row (highest y); ``OccupancyGrid.data`` starts at the bottom row.
:func:`save_map` writes what map_saver writes in trinary mode: occupied 0, free 254,
unknown 205, with ``occupied_thresh: 0.65`` and ``free_thresh: 0.196``.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Tuple, Union

import numpy as np
import yaml

from rlstack_nav.grid import OccupancyGrid

PathLike = Union[str, os.PathLike]

FREE_PIXEL = 254
OCCUPIED_PIXEL = 0
UNKNOWN_PIXEL = 205


class MapFormatError(ValueError):
    """The YAML or image is not a valid map (message says what and where)."""


# ------------------------------------------------------------------------------------ PGM
def _pgm_tokens(data: bytes, count: int, pos: int) -> Tuple[list, int]:
    """Read ``count`` whitespace-separated header tokens (skipping # comments) from ``pos``."""
    tokens = []
    n = len(data)
    while len(tokens) < count:
        while pos < n and data[pos:pos + 1].isspace():
            pos += 1
        if pos < n and data[pos:pos + 1] == b"#":
            while pos < n and data[pos:pos + 1] not in (b"\n", b"\r"):
                pos += 1
            continue
        start = pos
        while pos < n and not data[pos:pos + 1].isspace() and data[pos:pos + 1] != b"#":
            pos += 1
        if start == pos:
            raise MapFormatError("truncated PGM header")
        tokens.append(data[start:pos])
    return tokens, pos


def read_pgm(path: PathLike) -> np.ndarray:
    """Read a binary (P5) or ASCII (P2) PGM; returns uint8 (or uint16 for maxval > 255) rows top-first.
    Values are rescaled to 0..255 when maxval is not 255."""
    data = Path(path).read_bytes()
    magic = data[:2]
    if magic not in (b"P5", b"P2"):
        raise MapFormatError(f"{path}: not a PGM file (magic {magic!r}; expected P5 or P2)")
    try:
        (w, h, maxval), pos = _pgm_tokens(data, 3, 2)
        w, h, maxval = int(w), int(h), int(maxval)
    except ValueError as exc:
        raise MapFormatError(f"{path}: bad PGM header: {exc}") from exc
    if w <= 0 or h <= 0 or not 0 < maxval < 65536:
        raise MapFormatError(f"{path}: bad PGM size {w}x{h} or maxval {maxval}")
    if magic == b"P5":
        pos += 1  # exactly one whitespace byte after maxval
        dtype = np.dtype(">u2") if maxval > 255 else np.dtype(np.uint8)
        need = w * h * dtype.itemsize
        if len(data) - pos < need:
            raise MapFormatError(f"{path}: PGM pixel data truncated ({len(data) - pos} of {need} bytes)")
        img = np.frombuffer(data, dtype=dtype, count=w * h, offset=pos).reshape(h, w).astype(np.int64)
    else:
        values = data[pos:].split()
        if len(values) < w * h:
            raise MapFormatError(f"{path}: PGM pixel data truncated ({len(values)} of {w * h} values)")
        img = np.array([int(v) for v in values[:w * h]], np.int64).reshape(h, w)
    if maxval != 255:
        img = np.rint(img * (255.0 / maxval)).astype(np.int64)
    return np.clip(img, 0, 255).astype(np.uint8)


def write_pgm(path: PathLike, image: np.ndarray, comment: str = "") -> None:
    """Write a binary (P5) 8-bit PGM; ``image`` rows top-first."""
    img = np.asarray(image)
    if img.ndim != 2:
        raise ValueError("PGM image must be 2-D")
    header = b"P5\n"
    if comment:
        header += b"".join(b"# " + line.encode("ascii", "replace") + b"\n" for line in comment.splitlines())
    header += f"{img.shape[1]} {img.shape[0]}\n255\n".encode()
    Path(path).write_bytes(header + np.clip(img, 0, 255).astype(np.uint8).tobytes())


# -------------------------------------------------------------------------- YAML + image
def image_to_occupancy(image: np.ndarray, negate: bool, occupied_thresh: float, free_thresh: float,
                       mode: str = "trinary") -> np.ndarray:
    """Pixel values (rows top-first) -> ``OccupancyGrid.data`` values (rows bottom-first)."""
    x = np.asarray(image, np.float64)
    if mode == "raw":
        out = np.where(x >= 101, -1, x).astype(np.int8)
        return out[::-1].copy()
    p = x / 255.0 if negate else (255.0 - x) / 255.0
    out = np.full(x.shape, -1, np.int8)
    if mode == "trinary":
        pass
    elif mode == "scale":
        mid = np.rint(99.0 * (p - free_thresh) / (occupied_thresh - free_thresh))
        out = np.clip(mid, 0, 100).astype(np.int8)
    else:
        raise MapFormatError(f"unknown map mode '{mode}' (trinary, scale or raw)")
    out[p >= occupied_thresh] = 100
    out[p <= free_thresh] = 0
    return out[::-1].copy()


def load_map(yaml_path: PathLike, frame_id: str = "map") -> OccupancyGrid:
    """Load a map_server YAML + image pair. Raises :class:`MapFormatError` with the reason."""
    yaml_path = Path(yaml_path)
    try:
        meta = yaml.safe_load(yaml_path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise MapFormatError(f"cannot read map YAML {yaml_path}: {exc}") from exc
    except yaml.YAMLError as exc:
        raise MapFormatError(f"{yaml_path}: invalid YAML: {exc}") from exc
    if not isinstance(meta, dict):
        raise MapFormatError(f"{yaml_path}: expected a mapping of map keys")
    missing = [k for k in ("image", "resolution", "origin") if k not in meta]
    if missing:
        raise MapFormatError(f"{yaml_path}: missing key(s) {missing}")
    try:
        resolution = float(meta["resolution"])
        origin = [float(v) for v in meta["origin"]]
        negate = bool(int(meta.get("negate", 0)))
        occ = float(meta.get("occupied_thresh", 0.65))
        free = float(meta.get("free_thresh", 0.25))
    except (TypeError, ValueError) as exc:
        raise MapFormatError(f"{yaml_path}: bad value: {exc}") from exc
    mode = str(meta.get("mode", "trinary")).lower()
    if len(origin) != 3 or not all(math.isfinite(v) for v in origin):
        raise MapFormatError(f"{yaml_path}: origin must be [x, y, yaw], got {meta['origin']}")
    if not (resolution > 0 and math.isfinite(resolution)):
        raise MapFormatError(f"{yaml_path}: resolution must be > 0, got {resolution}")
    if not (0.0 <= free <= occ <= 1.0):
        raise MapFormatError(f"{yaml_path}: need 0 <= free_thresh <= occupied_thresh <= 1")
    image_path = Path(str(meta["image"]))
    if not image_path.is_absolute():
        image_path = yaml_path.parent / image_path
    if not image_path.exists():
        raise MapFormatError(f"{yaml_path}: image {image_path} not found")
    image = read_pgm(image_path)
    data = image_to_occupancy(image, negate, occ, free, mode)
    return OccupancyGrid(data, resolution, tuple(origin), frame_id)


def occupancy_to_image(data: np.ndarray) -> np.ndarray:
    """``OccupancyGrid.data`` (rows bottom-first) -> map_saver trinary pixels (rows top-first)."""
    d = np.asarray(data)
    img = np.full(d.shape, UNKNOWN_PIXEL, np.uint8)
    img[(d >= 0) & (d <= 25)] = FREE_PIXEL
    img[d >= 65] = OCCUPIED_PIXEL
    return img[::-1].copy()


def save_map(grid: OccupancyGrid, out_prefix: PathLike, comment: str = "") -> Tuple[Path, Path]:
    """Write ``<prefix>.yaml`` + ``<prefix>.pgm`` (trinary, negate 0); returns both paths."""
    prefix = Path(out_prefix)
    if prefix.suffix in (".yaml", ".yml", ".pgm"):
        prefix = prefix.with_suffix("")
    prefix.parent.mkdir(parents=True, exist_ok=True)
    pgm, yml = prefix.with_suffix(".pgm"), prefix.with_suffix(".yaml")
    write_pgm(pgm, occupancy_to_image(grid.data), comment)
    ox, oy, oyaw = grid.origin
    text = (
        (f"# {comment}\n" if comment else "")
        + f"image: {pgm.name}\n"
        + "mode: trinary\n"
        + f"resolution: {grid.resolution:g}\n"
        + f"origin: [{ox:g}, {oy:g}, {oyaw:g}]\n"
        + "negate: 0\n"
        + "occupied_thresh: 0.65\n"
        + "free_thresh: 0.196\n"
    )
    yml.write_text(text, encoding="utf-8")
    return yml, pgm
