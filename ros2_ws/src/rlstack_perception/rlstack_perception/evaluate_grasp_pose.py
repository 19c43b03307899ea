"""Error of the grasp-pose estimator from where the fetch robot looks before a grasp (in process, no ROS).

    python -m rlstack_perception.evaluate_grasp_pose [--layouts 10] [--views 3] [--json out.json]

For each seeded ``home`` layout and each coloured cube, ball and cylinder (on tables and on the
floor), the robot is put where the fetch mission docks -- ``base_link`` 0.44-0.76 m from the
object, facing it from a random free direction -- and the head camera renders the view it would
have there (the robot's own mast camera pose relative to ``base_link``, read from the backend; the
robot's body is not drawn at the new pose). The hint is the true centre plus a 2 cm (std) x/y
error, as the semantic map's centroid gives it. ``--depth-noise`` applies the bridge's depth noise
model (``sim_bridges.sensor_noise.DepthNoise``, robot mode) to every view. The estimate
(``grasp_pose.estimate_grasp_pose``, in ``base_link``) is compared with the simulator's pose: x/y,
z and 3-D centre error, yaw error mod 90 deg (cubes), and the share of views without a usable
estimate (by reason). Prints a table and one JSON line.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections import Counter
from typing import Dict, List, NamedTuple, Optional

import numpy as np

from .frame import Frame, quat_to_matrix
from .grasp_pose import GraspPoseConfig, estimate_grasp_pose, wrap_quarter
from .simtools import _free, target_objects

#: kinds whose footprint is square (their yaw error mod 90 deg is measured): the cube, the lego brick
SQUARE_KINDS = ("cube", "lego")


def head_camera_in_base(sim) -> tuple:
    """(R, t): the head camera's optical frame in base_link, from the loaded robot."""
    cf = sim.camera_frame("head_camera")
    odom = sim.base_odometry().pose
    rb = quat_to_matrix(odom.orientation)
    rc = quat_to_matrix(cf.pose.orientation)
    return rb.T @ rc, rb.T @ (np.asarray(cf.pose.position) - np.asarray(odom.position)), cf.intrinsics


def _render(sim, rotation, translation, intrinsics):
    from sim_bridges.contract import Pose
    from sim_bridges.geometry import matrix_to_quat
    from sim_bridges.robots.spec import CameraSpec

    spec = CameraSpec("grasp_view", Pose(translation.tolist(), list(matrix_to_quat(rotation))),
                      width=intrinsics.width, height=intrinsics.height, near=0.1, far=12.0)
    return sim.render_view(spec, spec.pose)


class HeadView(NamedTuple):
    """The head camera's render from a base pose placed by :func:`head_camera_view` (world frame)."""

    frame: object                  # sim_bridges CameraFrame (rgb, depth, ...)
    base_rotation: np.ndarray      # base_link in the world, 3x3
    base_position: np.ndarray      # base_link origin in the world (z: the wheel radius)
    camera_rotation: np.ndarray    # the optical frame in the world, 3x3
    camera_translation: np.ndarray


def head_camera_view(sim, centre, distance: float, azimuth: float, camera) -> Optional[HeadView]:
    """What the head camera sees with ``base_link`` ``distance`` m from ``centre`` (x, y[, z]) along
    ``azimuth`` and facing it; None where the base would not stand free in ``home``.
    ``camera``: :func:`head_camera_in_base` of the loaded robot."""
    r_cam, t_cam, intr = camera
    base = np.asarray(centre, float)[:2] - distance * np.array([math.cos(azimuth), math.sin(azimuth)])
    if abs(base[0]) > 3.6 or abs(base[1]) > 2.6 or not _free(sim, base, 0.05):
        return None
    rb = np.array([[math.cos(azimuth), -math.sin(azimuth), 0.0], [math.sin(azimuth), math.cos(azimuth), 0.0],
                   [0, 0, 1.0]])
    base3 = np.array([base[0], base[1], 0.08])          # base_link height: the wheel radius
    rot, trans = rb @ r_cam, rb @ t_cam + base3
    return HeadView(_render(sim, rot, trans, intr), rb, base3, rot, trans)


def evaluate(layouts: int = 10, views: int = 3, seed: int = 7, hint_std: float = 0.02,
             config: GraspPoseConfig = GraspPoseConfig(), progress: bool = True, depth_noise=None,
             view_range=(0.44, 0.76), floor_only: bool = False, scene: str = "home",
             kinds: Optional[List[str]] = None) -> Dict:
    """``depth_noise``: a ``sim_bridges.sensor_noise.DepthNoise`` applied to every view (None: exact depth).
    ``view_range``: base_link -> object distances of the views (m); the fetch looks at objects on tables
    from 0.44-0.76 m (docked) and at objects on the floor from ``floor_view_distance`` (1.0 m).
    ``floor_only``: only objects lying on the floor. ``scene``: ``home`` or ``home_kinds`` (the same
    rooms, one object of every other kind too); ``kinds``: only objects of these kinds (None: all)."""
    from sim_bridges.geometry import yaw_from_quat
    from sim_bridges.pybullet_backend import PyBulletBackend

    rng = np.random.default_rng(seed)
    sim = PyBulletBackend()
    sim.load_scene(scene)
    camera = head_camera_in_base(sim)
    r_cam, t_cam, intr = camera
    rows: List[Dict] = []
    reasons: Counter = Counter()
    t0 = time.perf_counter()
    for layout in range(layouts):
        sim.reset(1000 + layout)
        for name, st in target_objects(sim).items():
            c = np.asarray(st.pose.position, dtype=float)
            if (floor_only and c[2] >= 0.2) or (kinds and st.kind not in kinds):
                continue
            made = 0
            for _ in range(80):
                if made >= views:
                    break
                az = rng.uniform(-math.pi, math.pi)
                r = rng.uniform(*view_range)
                view = head_camera_view(sim, c, r, az, camera)
                if view is None:
                    continue
                made += 1
                cf, rb, base3 = view.frame, view.base_rotation, view.base_position
                depth = cf.depth
                if depth_noise is not None:
                    depth, _ = depth_noise.apply(depth, intr.fx, intr.fy, intr.cx, intr.cy, rng)
                frame = Frame(cf.rgb, depth, intr.fx, intr.fy, intr.cx, intr.cy, r_cam, t_cam)
                truth = rb.T @ (c - base3)                            # the object's centre in base_link
                hint = truth + np.array([rng.normal(0, hint_std), rng.normal(0, hint_std), 0.0])
                est = estimate_grasp_pose(frame, hint, config)
                row = {"object": name, "shape": st.shape, "kind": st.kind, "on_floor": bool(c[2] < 0.2),
                       "range_m": round(r, 3), "ok": est.ok, "reason": est.reason.split(":")[0]}
                if est.ok:
                    err = est.centre - truth
                    row.update(err_xy=float(np.hypot(err[0], err[1])), err_z=float(abs(err[2])),
                               err_3d=float(np.linalg.norm(err)), symmetric=est.symmetric,
                               aspect=float(est.size[2] / max(est.size[0], est.size[1], 1e-6)),
                               # what the hand closes across (the mission's max_grasp_width check)
                               narrow_m=float(min(est.size[0], est.size[1])))
                    if st.kind in SQUARE_KINDS:
                        true_yaw = yaw_from_quat(st.pose.orientation) - az
                        row["err_yaw_deg"] = abs(math.degrees(wrap_quarter(est.yaw - true_yaw)))
                else:
                    reasons[row["reason"]] += 1
                rows.append(row)
        if progress:
            print(f"[grasp_pose] layout {layout + 1}/{layouts}: {len(rows)} views, "
                  f"{time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
    sim.close()
    return summarize(rows, reasons)


def _stats(values: List[float]) -> Dict[str, float]:
    if not values:
        return {"median": None, "p95": None}
    return {"median": round(float(np.median(values)), 4), "p95": round(float(np.percentile(values, 95)), 4)}


def _spread(values: List[float]) -> Dict[str, float]:
    """min / 5th percentile / median / 95th percentile / max"""
    if not values:
        return {k: None for k in ("min", "p5", "median", "p95", "max")}
    q = np.percentile(values, [0, 5, 50, 95, 100])
    return dict(zip(("min", "p5", "median", "p95", "max"), (round(float(v), 3) for v in q)))


def summarize(rows: List[Dict], reasons: Counter) -> Dict:
    out = {"views": len(rows), "usable": sum(r["ok"] for r in rows), "failures": dict(reasons), "groups": {}}
    # by kind, not primitive shape: in home_kinds a book and a plate are boxes too
    for label, pick in (("all", lambda r: True), ("cubes", lambda r: r["kind"] == "cube"),
                        ("balls", lambda r: r["kind"] == "ball"), ("cylinders", lambda r: r["kind"] == "cylinder"),
                        ("lego bricks", lambda r: r["kind"] == "lego"),
                        ("on tables", lambda r: not r["on_floor"]), ("on the floor", lambda r: r["on_floor"]),
                        *((f"kind {k}", lambda r, k=k: r["kind"] == k)
                          for k in sorted({r["kind"] for r in rows} - {"cube", "ball", "cylinder", "lego"}))):
        sel = [r for r in rows if pick(r)]
        good = [r for r in sel if r["ok"]]
        out["groups"][label] = {
            "views": len(sel), "usable": len(good),
            "err_xy_m": _stats([r["err_xy"] for r in good]), "err_z_m": _stats([r["err_z"] for r in good]),
            "err_3d_m": _stats([r["err_3d"] for r in good]),
            "err_yaw_deg": _stats([r["err_yaw_deg"] for r in good if "err_yaw_deg" in r]),
            "symmetric_share": round(sum(r.get("symmetric", False) for r in good) / len(good), 3) if good else None,
            "aspect": _spread([r["aspect"] for r in good]),
            "narrow_side_m": _spread([r["narrow_m"] for r in good]),
        }
    return out


def markdown(res: Dict) -> str:
    lines = ["| objects | views | usable | x/y error median / p95 | z error median / p95 | 3-D median / p95 | "
             "yaw error median / p95 (cubes, lego) | read as round | height / footprint: min, p5, median, p95, max | "
             "narrower side, cm: min, p5, median, p95, max |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for label, g in res["groups"].items():
        f = lambda s, k=1000: "-" if s["median"] is None else f"{s['median'] * k:.1f} / {s['p95'] * k:.1f}"  # noqa: E731
        yaw = "-" if g["err_yaw_deg"]["median"] is None else \
            f"{g['err_yaw_deg']['median']:.1f} / {g['err_yaw_deg']['p95']:.1f} deg"
        aspect = "-" if g["aspect"]["median"] is None else ", ".join(f"{v:.2f}" for v in g["aspect"].values())
        narrow = ("-" if g["narrow_side_m"]["median"] is None
                  else ", ".join(f"{v * 100:.1f}" for v in g["narrow_side_m"].values()))
        lines.append(f"| {label} | {g['views']} | {g['usable']} | {f(g['err_xy_m'])} mm | {f(g['err_z_m'])} mm | "
                     f"{f(g['err_3d_m'])} mm | {yaw} | {g['symmetric_share']} | {aspect} | {narrow} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--layouts", type=int, default=10)
    p.add_argument("--views", type=int, default=3, help="views per object and layout")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--depth-noise", action="store_true", help="the bridge's RGB-D depth noise model (robot mode)")
    p.add_argument("--range", type=float, nargs=2, default=(0.44, 0.76), metavar=("MIN", "MAX"),
                   help="base_link -> object distance of the views, m (objects on the floor: 0.95 1.05)")
    p.add_argument("--floor-only", action="store_true", help="only objects lying on the floor")
    p.add_argument("--json", default="", help="also write the result here")
    p.add_argument("--scene", default="home", choices=("home", "home_kinds"))
    p.add_argument("--kinds", nargs="*", default=None, help="only objects of these kinds, e.g. cube lego")
    a = p.parse_args(argv)
    noise = None
    if a.depth_noise:
        from sim_bridges.sensor_noise import DepthNoise

        noise = DepthNoise()
    res = evaluate(a.layouts, a.views, a.seed, depth_noise=noise, view_range=tuple(a.range), floor_only=a.floor_only,
                   scene=a.scene, kinds=a.kinds)
    print(markdown(res))
    print(f"failures: {res['failures'] or 'none'}")
    line = json.dumps(res)
    print(line)
    if a.json:
        with open(a.json, "w") as f:
            f.write(line + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
