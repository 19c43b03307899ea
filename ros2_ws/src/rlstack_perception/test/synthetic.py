"""Analytic RGB-D frames for unit tests: a floor (z=0) plus axis-aligned boxes, ray-cast."""

from __future__ import annotations

import numpy as np

from rlstack_perception.frame import Frame


def look_at(eye, target):
    eye = np.asarray(eye, float)
    z = np.asarray(target, float) - eye
    z /= np.linalg.norm(z)
    x = np.cross(z, [0, 0, 1.0])
    x /= np.linalg.norm(x)
    y = np.cross(z, x)
    return np.column_stack([x, y, z]), eye


def render(boxes, eye=(-1.2, 0.0, 1.0), target=(0.0, 0.0, 0.0), w=160, h=120, f=104.0):
    """boxes: list of (centre, size, rgb). Returns a Frame (floor grey, NaN beyond 20 m)."""
    r, t = look_at(eye, target)
    cx, cy = w / 2 - 0.5, h / 2 - 0.5
    u, v = np.meshgrid(np.arange(w), np.arange(h))
    dirs_opt = np.stack([(u - cx) / f, (v - cy) / f, np.ones_like(u, float)], -1)  # z = 1
    dirs = dirs_opt @ r.T
    best = np.full((h, w), np.inf)
    rgb = np.zeros((h, w, 3), np.uint8)
    with np.errstate(divide="ignore", invalid="ignore"):
        s = -t[2] / dirs[..., 2]
    floor = (s > 0) & np.isfinite(s)
    best = np.where(floor, s, best)
    rgb[floor] = (150, 150, 150)
    for centre, size, colour in boxes:
        lo = np.asarray(centre) - np.asarray(size) / 2
        hi = np.asarray(centre) + np.asarray(size) / 2
        with np.errstate(divide="ignore", invalid="ignore"):
            t1 = (lo - t) / dirs
            t2 = (hi - t) / dirs
        tmin = np.nanmax(np.minimum(t1, t2), -1)
        tmax = np.nanmin(np.maximum(t1, t2), -1)
        hit = (tmax >= tmin) & (tmin > 0) & (tmin < best)
        best = np.where(hit, tmin, best)
        rgb[hit] = colour
    depth = np.where(np.isfinite(best) & (best < 20), best, np.nan).astype(np.float32)  # optical z = s (dir z=1)
    return Frame(rgb, depth, f, f, cx, cy, r, t)
