"""A small TF tree for the mission (pure Python + numpy; fed with tf2_msgs/TFMessage-like messages).

``tf2_ros`` is not available everywhere rlstack runs, and the mission needs only a few lookups
(grasp point in base_link, ground truth and semantic-map positions in the map frame), so it keeps
the latest transform of every frame and composes chains itself, with the same math as the
policy node (:mod:`rlstack_bundle.frames`).
"""

from __future__ import annotations

import math
import threading
from typing import Dict, Optional, Sequence, Tuple

import numpy as np

from rlstack_bundle.frames import quat_mul, quat_rotate, walk_up
from rlstack_bundle.frames import yaw as yaw_of  # noqa: F401 - re-exported: yaw of (x, y, z, w)

Vec3 = Tuple[float, float, float]
Quat = Tuple[float, float, float, float]


def quat_conj(q: Sequence[float]) -> Quat:
    return (-q[0], -q[1], -q[2], q[3])


class TfTree:
    """Latest transform per child frame; thread-safe; ``lookup(parent, child)`` composes chains."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._edges: Dict[str, Tuple[str, Vec3, Quat]] = {}

    def set(self, parent: str, child: str, t: Sequence[float], q: Sequence[float]) -> None:
        with self._lock:
            self._edges[child.lstrip("/")] = (parent.lstrip("/"), tuple(float(v) for v in t),
                                              tuple(float(v) for v in q))

    def update(self, msg, static: bool = False) -> None:  # noqa: ARG002 - static kept for symmetry
        for tr in msg.transforms:
            t, q = tr.transform.translation, tr.transform.rotation
            self.set(tr.header.frame_id, tr.child_frame_id, (t.x, t.y, t.z), (q.x, q.y, q.z, q.w))

    def _to_root(self, frame: str) -> Tuple[str, Vec3, Quat]:
        """(root frame, pose of ``frame`` in it)."""
        with self._lock:
            edges = dict(self._edges)
        return walk_up(edges, frame)

    def lookup(self, parent: str, child: str) -> Tuple[Vec3, Quat]:
        """Pose of ``child`` in ``parent``; KeyError when they are not connected."""
        return self.transform((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), child, parent)

    def transform(self, pos: Sequence[float], quat: Sequence[float], src: str, dst: str) -> Tuple[Vec3, Quat]:
        """A pose given in ``src`` expressed in ``dst``."""
        src, dst = src.lstrip("/"), dst.lstrip("/")
        if src == dst:
            return tuple(pos), tuple(quat)
        root_s, ps, qs = self._to_root(src)
        root_d, pd, qd = self._to_root(dst)
        if root_s != root_d:
            raise KeyError(f"frames '{src}' and '{dst}' are not connected (roots '{root_s}' and '{root_d}')")
        # pose in root = T_src * p
        r = quat_rotate(qs, pos)
        p_root = (ps[0] + r[0], ps[1] + r[1], ps[2] + r[2])
        q_root = quat_mul(qs, quat)
        # pose in dst = T_dst^-1 * pose in root
        inv = quat_conj(qd)
        p_dst = quat_rotate(inv, (p_root[0] - pd[0], p_root[1] - pd[1], p_root[2] - pd[2]))
        return p_dst, quat_mul(inv, q_root)

    def odom_to_map(self, x: float, y: float, yaw: float, map_frame: str, odom_frame: str = "odom"
                    ) -> Tuple[float, float, float]:
        """A planar odom-frame pose in the map frame (identity when no map -> odom transform is known)."""
        try:
            p, q = self.transform((x, y, 0.0), (0.0, 0.0, math.sin(yaw / 2), math.cos(yaw / 2)), odom_frame, map_frame)
        except KeyError:
            return x, y, yaw
        return p[0], p[1], yaw_of(q)


def to_frame(tf: TfTree, pos: np.ndarray, quat: np.ndarray, src: str, dst: str, _unused: Optional[object] = None
             ) -> Tuple[np.ndarray, np.ndarray]:
    """numpy wrapper of :meth:`TfTree.transform`."""
    p, q = tf.transform(tuple(float(v) for v in pos), tuple(float(v) for v in quat), src, dst)
    return np.array(p), np.array(q)
