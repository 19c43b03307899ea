"""A small pure TF buffer (no tf2_ros in our Python): static + timestamped dynamic edges.

``lookup(target, source, stamp)`` returns (R, t) mapping points in ``source`` into
``target`` by composing edges along the tree; dynamic edges are linearly interpolated
(slerp for rotation) between the two stamps around ``stamp`` and may be extrapolated by
at most ``max_extrapolation`` s. Errors raise :class:`LookupError` with a reason.
"""

from __future__ import annotations

import bisect
from collections import defaultdict, deque
from typing import Deque, Dict, List, Optional, Tuple

import numpy as np

from rlstack_perception.frame import quat_to_matrix


def _slerp(q0: np.ndarray, q1: np.ndarray, a: float) -> np.ndarray:
    d = float(q0 @ q1)
    if d < 0:
        q1, d = -q1, -d
    if d > 0.9995:
        q = q0 + a * (q1 - q0)
    else:
        th = np.arccos(d)
        q = (np.sin((1 - a) * th) * q0 + np.sin(a * th) * q1) / np.sin(th)
    return q / np.linalg.norm(q)



class TransformNotYet(LookupError):
    """The transform at that stamp is not known *yet*: /tf has not caught up with the stamp (a reader
    may wait for it, as tf2's MessageFilter does, instead of dropping the message)."""

class TfBuffer:
    def __init__(self, cache_s: float = 10.0, max_extrapolation: float = 0.2) -> None:
        self.cache_s = cache_s
        self.max_extrapolation = max_extrapolation
        self.parent: Dict[str, str] = {}
        self.static: Dict[str, Tuple[np.ndarray, np.ndarray]] = {}
        self.dynamic: Dict[str, Deque[Tuple[float, np.ndarray, np.ndarray]]] = defaultdict(deque)

    def set_transform(self, parent: str, child: str, translation, quaternion, stamp: float = 0.0,
                      static: bool = False) -> None:
        t = np.asarray(translation, dtype=float)
        q = np.asarray(quaternion, dtype=float)
        if not (np.all(np.isfinite(t)) and np.all(np.isfinite(q))) or np.linalg.norm(q) < 1e-9:
            raise ValueError(f"non-finite transform {parent} -> {child}")
        q = q / np.linalg.norm(q)
        self.parent[child] = parent
        if static:
            self.static[child] = (t, q)
            return
        hist = self.dynamic[child]
        if hist and stamp < hist[-1][0]:
            # out of order: insert sorted (rare)
            items = list(hist)
            items.insert(bisect.bisect([h[0] for h in items], stamp), (stamp, t, q))
            hist.clear()
            hist.extend(items)
        else:
            hist.append((stamp, t, q))
        while hist and hist[-1][0] - hist[0][0] > self.cache_s:
            hist.popleft()

    def _edge(self, child: str, stamp: Optional[float]) -> Tuple[np.ndarray, np.ndarray]:
        if child in self.static:
            return self.static[child]
        hist = self.dynamic.get(child)
        if not hist:
            raise LookupError(f"no transform for frame '{child}'")
        if stamp is None or len(hist) == 1:
            s, t, q = hist[-1]
            if stamp is not None and abs(stamp - s) > self.max_extrapolation:
                kind = TransformNotYet if stamp > s else LookupError
                raise kind(f"'{child}' at {stamp:.3f}: only {s:.3f} known")
            return t, q
        stamps = [h[0] for h in hist]
        i = bisect.bisect_left(stamps, stamp)
        if i == 0:
            if stamps[0] - stamp > self.max_extrapolation:
                raise LookupError(f"'{child}' at {stamp:.3f}: older than the buffer ({stamps[0]:.3f})")
            return hist[0][1], hist[0][2]
        if i == len(hist):
            if stamp - stamps[-1] > self.max_extrapolation:
                raise TransformNotYet(f"'{child}' at {stamp:.3f}: newer than the buffer ({stamps[-1]:.3f})")
            return hist[-1][1], hist[-1][2]
        (s0, t0, q0), (s1, t1, q1) = hist[i - 1], hist[i]
        a = 0.0 if s1 == s0 else (stamp - s0) / (s1 - s0)
        return t0 + a * (t1 - t0), _slerp(q0, q1, a)

    def _chain(self, frame: str) -> List[str]:
        chain = [frame]
        while chain[-1] in self.parent:
            chain.append(self.parent[chain[-1]])
            if len(chain) > 64:
                raise LookupError("transform loop")
        return chain

    def _to_root(self, frame: str, stamp: Optional[float]):
        r, t = np.eye(3), np.zeros(3)
        chain = self._chain(frame)
        for child in chain[:-1]:
            et, eq = self._edge(child, stamp)
            er = quat_to_matrix(eq)
            r, t = er @ r, er @ t + et
        return chain[-1], r, t

    def lookup(self, target: str, source: str, stamp: Optional[float] = None) -> Tuple[np.ndarray, np.ndarray]:
        """(R, t): p_target = R p_source + t."""
        known = set(self.parent) | set(self.parent.values())
        for name in (target, source):
            if name not in known and target != source:
                raise LookupError(f"unknown frame '{name}'")
        root_s, rs, ts = self._to_root(source, stamp)
        root_t, rt, tt = self._to_root(target, stamp)
        if root_s != root_t:
            raise LookupError(f"'{source}' and '{target}' are not connected ({root_s} vs {root_t})")
        return rt.T @ rs, rt.T @ (ts - tt)

    def can_transform(self, target: str, source: str, stamp: Optional[float] = None) -> bool:
        try:
            self.lookup(target, source, stamp)
            return True
        except LookupError:
            return False
