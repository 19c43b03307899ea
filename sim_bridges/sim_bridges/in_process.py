"""Helpers that play a fetch's arm and base moves on a backend in process, without the ROS graph:
for tests and ``tools/probes`` (the carry-grip test and probe use them).

Some reach into a backend's internals (the base teleport, the finger contact): they are for
experiments on a simulator, not part of the simulator contract (:mod:`sim_bridges.contract`).
"""

from __future__ import annotations

import math
from typing import Iterable, Iterator, Sequence, Tuple

import numpy as np

from .geometry import quat_to_matrix


def place_robot(sim, xy: Sequence[float], yaw: float) -> None:
    """Teleport the mobile base, standing at the origin with heading 0 after a reset, to ``xy``,
    ``yaw`` (PyBullet or MuJoCo): an experiment about the grasp need not drive there first."""
    c, s = math.cos(yaw), math.sin(yaw)
    rot = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
    if type(sim).__name__ == "MuJoCoBackend":
        import mujoco
        model, d = sim.model, sim.data
        j = next(j for j in range(model.njnt)
                 if model.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE and model.jnt_bodyid[j] == sim._mobile[3])
        a, v = model.jnt_qposadr[j], model.jnt_dofadr[j]
        d.qpos[a:a + 3] = rot @ d.qpos[a:a + 3] + np.array([xy[0], xy[1], 0.0])
        q = np.zeros(4)
        mujoco.mju_mulQuat(q, np.array([math.cos(yaw / 2), 0.0, 0.0, math.sin(yaw / 2)]), d.qpos[a + 3:a + 7].copy())
        d.qpos[a + 3:a + 7] = q
        d.qvel[v:v + 6] = 0.0
        mujoco.mj_forward(model, d)
        sim._dirty = True
    else:
        import pybullet as p
        body, cid = sim._mobile.body, sim._cid
        pos, orn = p.getBasePositionAndOrientation(body, physicsClientId=cid)
        new_pos = rot @ np.asarray(pos) + np.array([xy[0], xy[1], 0.0])
        _, new_orn = p.multiplyTransforms((0, 0, 0), p.getQuaternionFromEuler((0, 0, yaw)), (0, 0, 0), orn)
        p.resetBasePositionAndOrientation(body, new_pos.tolist(), new_orn, physicsClientId=cid)
        p.resetBaseVelocity(body, (0, 0, 0), (0, 0, 0), physicsClientId=cid)


def in_base(sim, world: Sequence[float]) -> np.ndarray:
    """A world point in ``base_link``."""
    base = sim.body_pose("base_link")
    return quat_to_matrix(base.orientation).T @ (np.asarray(world, float) - base.position)


def grasp_point(sim) -> np.ndarray:
    """The Panda's grasp point (``panda_grasptarget``) in ``base_link``, as the mission's arm moves see it."""
    return in_base(sim, sim.body_pose("panda_grasptarget").position)


def finger_width(sim) -> float:
    """The opening between the fingers (m): the sum of the two finger joints."""
    js = sim.joint_state()
    return float(sum(v for n, v in zip(js.names, js.position) if "finger" in n))


def object_in_hand(sim, name: str) -> np.ndarray:
    """Object ``name``'s centre in the grasp frame (m): x along the pads, y between the fingers, z
    along the fingers (simulator truth)."""
    g = sim.body_pose("panda_grasptarget")
    return quat_to_matrix(g.orientation).T @ (sim.ground_truth()[name].pose.position - g.position)


def set_finger_solref(sim, solref: Sequence[float]) -> None:
    """Give the MuJoCo finger geoms' contacts ``solref`` ``(a, b)`` (``(0.02, 1)``: MuJoCo's default
    instead of the backend's stiffer finger-pad contact): the backend's own selection of the geoms."""
    sim._set_finger_pad_solref(solref)


def ramp(plan: Iterable[Tuple[float, float, float]], dt: float = 0.05) -> Iterator[Tuple[float, float]]:
    """Base commands ``(v, w)`` every ``dt`` through ``plan`` [(v, w, seconds)], ramped as the nav
    controller limits them (0.5 m/s^2 up, 0.8 m/s^2 down, 2.5 rad/s^2)."""
    v = w = 0.0
    for v_goal, w_goal, seconds in plan:
        for _ in range(int(round(seconds / dt))):
            dv = (0.5 if abs(v_goal) > abs(v) else 0.8) * dt
            v += max(-dv, min(dv, v_goal - v))
            w += max(-2.5 * dt, min(2.5 * dt, w_goal - w))
            yield v, w
