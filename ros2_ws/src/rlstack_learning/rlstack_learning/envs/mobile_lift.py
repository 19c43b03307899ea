"""Lift with the mobile manipulator (``mobile_table`` scene), observed in the robot's ``base_link``.

The fetch mission's grasp step: the diff-drive base has stopped in front of a table; the Panda on
it must grasp the target cube (5 cm, 80 g, home's spec) and lift it. Same task as
:mod:`rlstack_learning.envs.lift` (same actions, reward, success: the cube's centre >= 10 cm above
its resting height for 40 consecutive steps = 2 s, within 160 steps = 8 s), but every observation
is expressed in ``base_link``, so it does not change when the base (and everything it sees)
moves: the policy serves any base pose.

Observation (11, same order and meaning as lift):

* grasp point x/y/z: ``tf_position {parent: base_link, child: panda_grasptarget}`` of ``/tf``
  (the bridge publishes odom -> base_link -> panda_link0 -> ... -> panda_grasptarget);
* finger opening: ``sum`` of the two finger joints of ``/joint_states``;
* target position x/y/z and yaw (sin/cos 4 x yaw) from ``/grasp_target``
  (``geometry_msgs/msg/PoseStamped``, ``header.frame_id: base_link``): the target cube's centre
  pose in ``base_link``. In process it is the ground truth of ``target_cube`` transformed by the
  base's world pose; the fetch mission publishes exactly that (or perception does);
* height still to lift: ``offset_minus`` of the target z with ``TARGET_Z`` (the cube's resting
  centre height in base_link, 0.445 m, + 0.10 m);
* grasp-point-to-target distance.

Actions: grasp-point deltas on ``/arm/ee_delta`` (the arm base frame ``panda_link0`` has
base_link's orientation) and the gripper on ``/arm/gripper``, as lift. The gripper's
``safe_action`` is ``hold``: a policy node that stops (deactivation, stale input, e-stop) keeps
the gripper as last commanded, so a carried cube is not dropped; the deltas' safe action is zero.

The scripted expert of lift works unchanged (it acts on observation differences, all in one frame).
``python -m rlstack_learning.envs.mobile_lift [--episodes 100] [--randomize]``: its baseline.
"""

from __future__ import annotations

from typing import Tuple

import numpy as np

from rlstack_bundle import derive as ops
from rlstack_bundle.terms import ActTerm, ObsTerm, Source, derive
from sim_bridges.robots.panda import FINGER_JOINTS
from sim_bridges.scenes.mobile_table import CUBE_REST_Z, TARGET

from .lift import EE_FRAME, HOLD_STEPS, LIFT_HEIGHT, MAX_DELTA, PandaLiftEnv, scripted_expert

BASE_FRAME = "base_link"
#: base_link's height above the floor (the wheel radius of the mobile_table/home robot)
BASE_Z = 0.08
#: resting height of the target cube's centre in base_link (table top 0.5 + 0.025 - 0.08)
REST_Z = round(CUBE_REST_Z - BASE_Z, 9)
#: constant of the height-still-to-lift term: the cube is high enough when its z in base_link >= this
TARGET_Z = round(REST_Z + LIFT_HEIGHT, 9)
GRASP_TARGET = Source("/grasp_target", "geometry_msgs/msg/PoseStamped", "pose.position")
_EE_TERMS = ["ee_x", "ee_y", "ee_z"]
_TARGET_TERMS = ["target_x", "target_y", "target_z"]


def _ee(axis: str) -> Source:
    return Source("/tf", "tf2_msgs/msg/TFMessage", "transforms",
                  derive=derive("tf_position", parent=BASE_FRAME, child=EE_FRAME, axis=axis))


def _target(field: str, **kw) -> Source:
    return Source(GRASP_TARGET.topic, GRASP_TARGET.msg_type, field, **kw)


def _inverse(pos, quat) -> Tuple[np.ndarray, Tuple[float, float, float, float]]:
    """(R^T, -R^T p) as a rotation matrix and (conjugate) quaternion of the pose (pos, quat xyzw)."""
    x, y, z, w = (float(v) for v in quat)
    r = np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                  [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                  [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])
    return r.T, (-x, -y, -z, w)


def in_base_frame(base_pos, base_quat, pos, quat=None):
    """Position (and quaternion xyzw) of a world pose expressed in base_link, whose world pose is
    (``base_pos``, ``base_quat``): what the fetch mission publishes on ``/grasp_target``."""
    rt, conj = _inverse(base_pos, base_quat)
    p = rt @ (np.asarray(pos, np.float64) - np.asarray(base_pos, np.float64))
    if quat is None:
        return p
    return p, ops.quat_mul(conj, tuple(float(v) for v in quat))


class MobileLiftEnv(PandaLiftEnv):
    task_name = "mobile_lift"
    env_id = "RlStack/MobileLift-v0"
    scene = "mobile_table"
    scene_options = {"arm_visual": "low_poly"}
    camera = "side_camera"
    robot_name = "mobile_manipulator"
    rest_z = REST_Z
    obs_terms = (
        ObsTerm("ee_x", "m", BASE_FRAME, _ee("x"), noise_std=0.001, description="grasp point x"),
        ObsTerm("ee_y", "m", BASE_FRAME, _ee("y"), noise_std=0.001, description="grasp point y"),
        ObsTerm("ee_z", "m", BASE_FRAME, _ee("z"), noise_std=0.001, description="grasp point z"),
        ObsTerm("finger_width", "m", "panda_hand",
                Source("/joint_states", "sensor_msgs/msg/JointState", "position", key=",".join(FINGER_JOINTS),
                       derive=derive("sum")), noise_std=0.0005, description="gripper opening"),
        ObsTerm("target_x", "m", BASE_FRAME, _target("pose.position.x"), noise_std=0.002,
                description="target cube centre x"),
        ObsTerm("target_y", "m", BASE_FRAME, _target("pose.position.y"), noise_std=0.002,
                description="target cube centre y"),
        ObsTerm("target_z", "m", BASE_FRAME, _target("pose.position.z"), noise_std=0.002,
                description="target cube centre z"),
        ObsTerm("target_yaw_sin4", "1", BASE_FRAME, _target("pose.orientation", derive=derive("sin_kyaw", k=4)),
                description="target cube yaw about base_link z, 90-deg symmetric"),
        ObsTerm("target_yaw_cos4", "1", BASE_FRAME, _target("pose.orientation", derive=derive("cos_kyaw", k=4)),
                description="target cube yaw about base_link z, 90-deg symmetric"),
        ObsTerm("target_dz", "m", BASE_FRAME,
                _target("pose.position.z", derive=derive("offset_minus", constant=TARGET_Z)),
                description="height still to lift (resting centre z in base_link + 0.10 m, minus z)"),
        ObsTerm("ee_to_target_dist", "m", BASE_FRAME,
                _target("pose.position", derive=derive("distance", a=_TARGET_TERMS, b=_EE_TERMS)),
                description="distance grasp point -> target cube centre"),
    )
    act_terms = tuple(
        ActTerm(f"ee_d{a}", "m", Source("/arm/ee_delta", "geometry_msgs/msg/Vector3", a),
                limits=(-MAX_DELTA, MAX_DELTA), scale=MAX_DELTA, safe_action="zero",
                description=f"grasp point step along {a} (arm base frame = base_link orientation)")
        for a in "xyz"
    ) + (
        ActTerm("gripper", "1", Source("/arm/gripper", "std_msgs/msg/Bool", "data", derive="open = value > 0"),
                limits=(-1.0, 1.0), scale=1.0, safe_action="hold",
                description="> 0 open, <= 0 close; safe action: hold (a carried cube is not dropped)"),
    )
    io_notes = (
        "/grasp_target (geometry_msgs/msg/PoseStamped, header.frame_id base_link): the target cube's centre "
        "pose in base_link (position and orientation; only the yaw about base_link z is used, mod 90 deg). "
        "Publish it at the control rate (or faster) while the policy runs: it goes stale after 3 periods.",
        f"target_dz assumes base_link {BASE_Z} m above the floor and a 0.5 m table top: resting cube centre z "
        f"= {REST_Z} m in base_link, TARGET_Z = {TARGET_Z} m. Other table heights need another bundle.",
        "Trained for a base parked with the target 0.44-0.76 m ahead of base_link and |y| <= 0.25 m, any yaw; "
        "keep the base still (cmd_vel zero) while the policy runs.",
    )
    success_definition = (f"the target cube's centre stays at least {LIFT_HEIGHT * 100:g} cm above its resting height "
                          f"for {HOLD_STEPS} consecutive control steps ({HOLD_STEPS / 20:g} s) within 160 steps (8 s); "
                          "5 cm / 80 g cube on a 0.5 m table whose near edge is 0.40 m ahead of base_link, start "
                          "uniform over x in [0.44, 0.76] m, y in [-0.25, 0.25] m in base_link (the fetch mission's "
                          "parking range), any yaw, a distractor cube at least 12 cm away")
    card_limitations = (
        "Simulation only; the target pose comes from the simulator's ground truth transformed into base_link (the "
        "fetch mission publishes it on /grasp_target; a real robot needs perception with the same fields) and the "
        "grasp point from forward kinematics (/tf). Trained for one table height (0.5 m) and base_link 0.08 m above "
        "the floor. The contract's end-effector deltas keep a fixed gripper yaw, so cubes near 45 deg are grasped "
        "on their corners. The policy imitates a scripted expert: no better than the expert (one grasp attempt, "
        "re-tries only if the cube is far from the hand).")

    def _base_pose(self):
        odom = self.sim.base_odometry()   # odom = world in the sim
        return odom.pose.position, odom.pose.orientation

    def ee_position(self) -> np.ndarray:
        """Grasp point in base_link (what tf_position base_link -> panda_grasptarget gives)."""
        bp, bq = self._base_pose()
        return in_base_frame(bp, bq, np.array(self.sim.body_pose(EE_FRAME).position))

    def target_pose(self):
        """The target cube's centre (position, quaternion xyzw) in base_link: /grasp_target's pose."""
        bp, bq = self._base_pose()
        cube = self.sim.ground_truth()[TARGET]
        return in_base_frame(bp, bq, cube.pose.position, cube.pose.orientation)

    def _raw_obs(self) -> np.ndarray:
        # what each term's source reads (before its derive); the declared derive ops do the rest
        bp, bq = self._base_pose()
        ee = in_base_frame(bp, bq, np.array(self.sim.body_pose(EE_FRAME).position))
        cube = self.sim.ground_truth()[TARGET]
        c, q = in_base_frame(bp, bq, cube.pose.position, cube.pose.orientation)
        js = self.sim.joint_state()
        read = {"ee_x": ee, "ee_y": ee, "ee_z": ee,
                "finger_width": [js.position[i] for i in self._fingers],
                "target_x": c[0], "target_y": c[1], "target_z": c[2],
                "target_yaw_sin4": q, "target_yaw_cos4": q, "target_dz": c[2]}
        return np.array(ops.raw_vector(self.obs_terms, read), dtype=np.float64)


def main(argv=None) -> int:
    """``python -m rlstack_learning.envs.mobile_lift [--episodes 100] [--randomize] [--video f.mp4]``:
    expert baseline."""
    import argparse

    import gymnasium as gym

    from ..evaluate import run_episodes, write_video
    from .base import EVAL_SEED_BASE

    p = argparse.ArgumentParser(description="scripted-expert baseline of the mobile-manipulator lift task")
    p.add_argument("--episodes", type=int, default=100)
    p.add_argument("--seed-base", type=int, default=EVAL_SEED_BASE)
    p.add_argument("--randomize", action="store_true")
    p.add_argument("--video")
    a = p.parse_args(argv)
    env = gym.make(MobileLiftEnv.env_id, randomize=a.randomize, render_mode="rgb_array" if a.video else None)
    frames = [] if a.video else None
    res = run_episodes(env, scripted_expert(env.unwrapped), [a.seed_base + i for i in range(a.episodes)],
                       frames=frames, progress=True)
    if a.video:
        write_video(a.video, frames, env.metadata["render_fps"])
    env.close()
    print(f"scripted expert{' (DR)' if a.randomize else ''}: success {res['successes']}/{res['episodes']}, "
          f"mean length {res['mean_length']:.1f} steps, failed seeds {res['failed_seeds']}, {res['wall_time_s']} s")
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(main())
