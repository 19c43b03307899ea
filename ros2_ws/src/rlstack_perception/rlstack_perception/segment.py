"""Segmenters and mask filters.

A segmenter turns a :class:`~rlstack_perception.frame.Frame` into candidate masks
(:class:`Segment`); :func:`filter_segments` drops masks that are too small, unstable or
without enough valid depth. The default, :class:`DepthPlaneSegmenter`, needs no weights:
horizontal support planes (floor, table tops) are found from depth, points standing on
them are kept and split into connected components at depth discontinuities.
SAM lives in :mod:`rlstack_perception.backends.sam` (imported lazily).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Optional, Protocol, Sequence

import numpy as np
from scipy import ndimage

from rlstack_perception.frame import Frame


@dataclass
class Segment:
    """One candidate object mask. ``stability`` in 0..1 (SAM's stability score or ours)."""

    mask: np.ndarray  # (H, W) bool
    stability: float = 1.0
    score: float = 1.0
    meta: dict = field(default_factory=dict)

    @property
    def area(self) -> int:
        return int(self.mask.sum())

    def bbox(self) -> tuple[int, int, int, int]:
        """(row0, row1, col0, col1), inclusive-exclusive."""
        rows = np.flatnonzero(self.mask.any(axis=1))
        cols = np.flatnonzero(self.mask.any(axis=0))
        return int(rows[0]), int(rows[-1]) + 1, int(cols[0]), int(cols[-1]) + 1


class Segmenter(Protocol):
    name: str

    def segment(self, frame: Frame, points: np.ndarray, valid: np.ndarray) -> List[Segment]:
        ...


# ---------------------------------------------------------------------------- support planes
def support_levels(points: np.ndarray, valid: np.ndarray, *, min_pixels: int = 300, min_fraction: float = 0.01,
                   bin_m: float = 0.01, normal_z: float = 0.95, stride: int = 2) -> np.ndarray:
    """Heights (m, map z) of the horizontal support surfaces seen in the frame, ascending.

    Horizontal pixels (surface normal within ~18 deg of vertical, from neighbouring points)
    are histogrammed by height; every bin holding at least ``max(min_pixels, min_fraction *
    valid pixels)`` (counted at ``stride``) is a level, refined to the median of its pixels.
    """
    p = points[::stride, ::stride]
    du = p[1:-1, 2:] - p[1:-1, :-2]
    dv = p[2:, 1:-1] - p[:-2, 1:-1]
    n = np.cross(du, dv)
    norm = np.linalg.norm(n, axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        nz = np.abs(n[..., 2]) / norm
    z = p[1:-1, 1:-1, 2]
    horiz = np.isfinite(nz) & (nz > normal_z) & np.isfinite(z)
    zs = z[horiz]
    if zs.size == 0:
        return np.zeros(0)
    n_valid = max(1, int(valid[::stride, ::stride].sum()))
    need = max(min_pixels / (stride * stride), min_fraction * n_valid)
    lo = np.floor(zs.min() / bin_m) * bin_m
    bins = np.floor((zs - lo) / bin_m).astype(np.int64)
    counts = np.bincount(bins)
    # Count each pair of neighbouring bins together: a plane lying exactly on a bin edge (the
    # home tables' tops at z = 0.500) splits its pixels over two bins, each of which alone can
    # fall below the threshold although the plane is plainly there.
    pair = counts.copy()
    pair[:-1] += counts[1:]
    levels = []
    for b in np.flatnonzero(pair >= need):
        # merge a level with nearby pairs (the same plane seen from both sides of an edge)
        if levels and b - levels[-1][0] <= 2:
            if pair[b] > levels[-1][1]:
                levels[-1] = (b, pair[b])
            continue
        levels.append((b, pair[b]))
    out = []
    for b, _ in levels:
        sel = zs[np.abs(zs - (lo + (b + 1.0) * bin_m)) < 1.5 * bin_m]  # centred on the pair's shared edge
        out.append(float(np.median(sel)))
    return np.array(sorted(out))


def height_above_support(points: np.ndarray, levels: np.ndarray, tol: float = 0.01):
    """Per-pixel (height above the highest support level below it, that level); NaN if none."""
    z = points[..., 2]
    h = np.full(z.shape, np.nan)
    base = np.full(z.shape, np.nan)
    for lvl in levels:  # ascending: higher levels overwrite
        above = z >= lvl - tol
        h = np.where(above, z - lvl, h)
        base = np.where(above, lvl, base)
    return h, base


def _grow_across_links(labels: np.ndarray, allow: np.ndarray, link_x: np.ndarray,
                       link_y: np.ndarray) -> np.ndarray:
    """One growth step: unlabelled ``allow`` pixels take a 4-neighbour's label, but only across
    an edge whose two pixels lie on one surface (``link_x``: (r, c)-(r, c+1); ``link_y``:
    (r, c)-(r+1, c)). Where several neighbours offer labels the largest wins."""
    offered = np.zeros_like(labels)
    np.maximum(offered[:, 1:], np.where(link_x, labels[:, :-1], 0), out=offered[:, 1:])
    np.maximum(offered[:, :-1], np.where(link_x, labels[:, 1:], 0), out=offered[:, :-1])
    np.maximum(offered[1:], np.where(link_y, labels[:-1], 0), out=offered[1:])
    np.maximum(offered[:-1], np.where(link_y, labels[1:], 0), out=offered[:-1])
    return np.where((labels == 0) & allow & (offered > 0), offered, labels)


# ---------------------------------------------------------------------------- default segmenter
class DepthPlaneSegmenter:
    """Weight-free: points above a support plane, split into 3-D connected components.

    :param min_height: points lower than this above their support belong to the support (m)
    :param max_height: taller structures (walls, furniture sides) are not objects (m)
    :param max_extent: components wider than this (m) are structure, not objects
    :param edge_jump: neighbouring pixels further apart than ``edge_jump`` (m, plus 3 pixel
        footprints) are not connected (depth discontinuity)
    :param min_area: components below this many pixels are dropped early
    """

    name = "depth_plane"

    def __init__(self, min_height: float = 0.006, max_height: float = 0.35, max_extent: float = 0.30,
                 edge_jump: float = 0.02, min_area: int = 12, max_base_gap: float = 0.04,
                 grow_height: float = 0.0015, grow_steps: int = 4) -> None:
        self.grow_height = grow_height
        self.grow_steps = grow_steps
        self.min_height = min_height
        self.max_height = max_height
        self.max_extent = max_extent
        self.edge_jump = edge_jump
        self.min_area = min_area
        self.max_base_gap = max_base_gap

    def segment(self, frame: Frame, points: np.ndarray, valid: np.ndarray,
                levels: Optional[np.ndarray] = None) -> List[Segment]:
        if levels is None:
            levels = support_levels(points, valid)
        if len(levels) == 0:
            return []
        h, _ = height_above_support(points, levels)
        with np.errstate(invalid="ignore"):
            cand = valid & (h > self.min_height) & (h < self.max_height)
        if not cand.any():
            return []
        # cut connections at depth discontinuities: a pixel is a "core" pixel when all its
        # 4-neighbours are close in 3-D; components are labelled on the core, then the cut
        # boundary ring is given back to the adjacent component.
        thr = (self.edge_jump + 3.0 * np.where(valid, frame.depth, 0.0) / frame.fx).astype(np.float32)
        # Squared 3-D distances between 4-neighbours on contiguous float32 planes: the same test
        # as a norm of the (H, W, 3) differences, several times cheaper.
        x, y, z = (np.ascontiguousarray(points[..., k], dtype=np.float32) for k in range(3))
        with np.errstate(invalid="ignore"):
            dx2 = (x[:, 1:] - x[:, :-1]) ** 2 + (y[:, 1:] - y[:, :-1]) ** 2 + (z[:, 1:] - z[:, :-1]) ** 2
            dy2 = (x[1:] - x[:-1]) ** 2 + (y[1:] - y[:-1]) ** 2 + (z[1:] - z[:-1]) ** 2
            link_x = dx2 < thr[:, 1:] ** 2   # pixel (r, c) and (r, c+1) are on one surface
            link_y = dy2 < thr[1:] ** 2      # pixel (r, c) and (r+1, c) are on one surface
        jump = np.zeros(cand.shape, dtype=bool)
        jump[:, 1:] |= ~link_x
        jump[:, :-1] |= ~link_x
        jump[1:] |= ~link_y
        jump[:-1] |= ~link_y
        core = cand & ~jump
        labels, n = ndimage.label(core)
        if n == 0:
            return []
        # Give the boundary ring back, then the object's lowest band (below min_height, above
        # the support plane itself). Growth crosses only linked 4-neighbour edges: a 3x3
        # dilation also stepped diagonally and across depth jumps, and leaked labels onto
        # table sides 0.4 m behind an object, which max_extent then rejected.
        with np.errstate(invalid="ignore"):
            low = valid & (h > self.grow_height) & ~jump
        for _ in range(2):
            labels = _grow_across_links(labels, cand, link_x, link_y)
        for _ in range(self.grow_steps):
            labels = _grow_across_links(labels, low, link_x, link_y)
        strict = h > 2 * self.min_height
        segs = []
        objects = ndimage.find_objects(labels)
        for i, sl in enumerate(objects, start=1):
            if sl is None:
                continue
            m = labels[sl] == i
            area = int(m.sum())
            if area < self.min_area:
                continue
            pts = points[sl][m]
            hh = h[sl][m]
            lo, hi = np.percentile(pts[:, :2], [2, 98], axis=0)
            if np.any(hi - lo > self.max_extent):
                continue
            if np.percentile(hh, 2) > self.max_base_gap:  # floating: not standing on the support
                continue
            mask = np.zeros(cand.shape, dtype=bool)
            mask[sl] = m
            stability = float((strict[sl] & m).sum()) / area
            segs.append(Segment(mask=mask, stability=stability, score=stability, meta={"source": self.name}))
        return segs


# ---------------------------------------------------------------------------- filters
@dataclass
class FilterConfig:
    min_area: int = 30            # pixels
    max_area_fraction: float = 0.5
    min_stability: float = 0.6
    min_valid_depth: float = 0.8  # fraction of mask pixels with a depth return


def filter_segments(segments: Sequence[Segment], valid: np.ndarray, cfg: FilterConfig) -> tuple[list, dict]:
    """Keep the segments that pass every filter; return (kept, counts of drops per reason)."""
    kept, dropped = [], {"small": 0, "large": 0, "unstable": 0, "no_depth": 0}
    total = valid.size
    for s in segments:
        a = s.area
        if a < cfg.min_area:
            dropped["small"] += 1
        elif a > cfg.max_area_fraction * total:
            dropped["large"] += 1
        elif s.stability < cfg.min_stability:
            dropped["unstable"] += 1
        elif valid[s.mask].mean() < cfg.min_valid_depth:
            dropped["no_depth"] += 1
        else:
            kept.append(s)
    return kept, dropped
