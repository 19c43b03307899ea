"""In-process PyBullet helpers for evaluation, dataset rendering and benchmarks (never the node).

* :func:`render_view` renders the scene from any optical pose through the backend contract's
  ``render_view`` (the camera model of the backend's own cameras).
* :func:`gt_masks` labels pixels whose back-projected point lies inside an object's true
  geometry (box/sphere/cylinder from ``ground_truth()``; a mesh object's bounding box), so masks
  need no simulator ids.
* :func:`object_views` samples seeded viewpoints around each object, at robot-mast-like
  heights and 0.7-1.6 m away, outside furniture.
"""

from __future__ import annotations

from typing import Dict, Iterator, Tuple

import numpy as np

from rlstack_perception.frame import Frame, quat_to_matrix


def render_view(sim, eye, target, width: int = 320, height: int = 240) -> Frame:
    """The scene seen from ``eye`` looking at ``target`` (world frame), ``width`` x ``height``."""
    from sim_bridges.geometry import look_at_optical
    from sim_bridges.robots.spec import CameraSpec

    spec = CameraSpec("eval_view", look_at_optical(eye, target), width=width, height=height, near=0.05, far=10.0)
    return Frame.from_camera_frame(sim.render_view(spec, spec.pose))


def label_of(state) -> str:
    return f"{state.color_name} {state.kind}"


def target_objects(sim) -> Dict[str, object]:
    """The labelled objects of the loaded scene: every object of a kind perception names (``KINDS``)
    in one of its colours (robot links, furniture and walls are not)."""
    from rlstack_perception.embed import COLOURS, KINDS

    return {k: v for k, v in sim.ground_truth().items()
            if v.kind in KINDS and v.color_name in COLOURS and max(v.size) < 0.25}


def inside_object(points: np.ndarray, state, margin: float = 0.004) -> np.ndarray:
    r = quat_to_matrix(state.pose.orientation)
    local = (points - np.asarray(state.pose.position)) @ r  # rows: R^T (p - c)
    sx, sy, sz = (0.5 * s + margin for s in state.size)
    with np.errstate(invalid="ignore"):
        if state.shape == "sphere":
            return np.linalg.norm(local, axis=-1) < sx
        if state.shape == "cylinder":
            return (np.hypot(local[..., 0], local[..., 1]) < sx) & (np.abs(local[..., 2]) < sz)
        return (np.abs(local[..., 0]) < sx) & (np.abs(local[..., 1]) < sy) & (np.abs(local[..., 2]) < sz)


def _above_support(points: np.ndarray, state, eps: float = 0.0015) -> np.ndarray:
    # the support surface touching the object's bottom is not the object
    bottom = float(state.pose.position[2]) - 0.5 * float(state.size[2])
    with np.errstate(invalid="ignore"):
        return points[..., 2] > bottom + eps


def gt_masks(frame: Frame, objects: Dict[str, object], min_area: int = 1) -> Dict[str, np.ndarray]:
    pts, valid = frame.points_world()
    out = {}
    for name, st in objects.items():
        m = inside_object(pts, st) & _above_support(pts, st) & valid
        if m.sum() >= min_area:
            out[name] = m
    return out


def _free(sim, xy, clearance: float = 0.3) -> bool:
    try:
        boxes = sim.static_occupancy()
    except Exception:  # noqa: BLE001 - scenes without occupancy
        boxes = []
    for b in boxes:
        if b.x_min - clearance < xy[0] < b.x_max + clearance and b.y_min - clearance < xy[1] < b.y_max + clearance:
            if b.height > 0.05:
                return False
    return True


def object_views(sim, rng: np.random.Generator, per_object: int = 2, dist=(0.7, 1.6), height=(0.9, 1.45),
                 scene: str = "home") -> Iterator[Tuple[str, np.ndarray, np.ndarray]]:
    """Yield (object name, eye, target) for seeded viewpoints around each target object."""
    objs = target_objects(sim)
    for name, st in objs.items():
        c = np.asarray(st.pose.position)
        made = 0
        for _ in range(60):
            if made >= per_object:
                break
            az = rng.uniform(-np.pi, np.pi)
            r = rng.uniform(*dist)
            eye = np.array([c[0] + r * np.cos(az), c[1] + r * np.sin(az), rng.uniform(*height)])
            if scene.startswith("home") and (abs(eye[0]) > 3.75 or abs(eye[1]) > 2.75 or not _free(sim, eye[:2], 0.15)):
                continue
            target = c + np.array([rng.normal(0, 0.15), rng.normal(0, 0.15), 0.0])
            made += 1
            yield name, eye, target
