"""Panda lift on the ``panda_table`` scene: grasp the red cube and lift it to a target height.

The scene places the cubes at seeded random positions and yaws (+-45 deg). Actions are
end-effector position deltas (arm base frame, through the backend's IK, gripper kept
pointing down) plus a gripper command (open when > 0). Success (terminates the episode):
the red cube's centre has stayed at least ``LIFT_HEIGHT`` (10 cm) above its resting height
for ``HOLD_STEPS`` consecutive control steps (2 s). Truncated after 160 steps (8 s at 20 Hz).

Observation (11): grasp-point position (forward kinematics of ``/joint_states``, as a
``robot_state_publisher`` would publish on ``/tf``), finger opening, cube position and yaw
(as sin/cos of 4 x yaw: a cube looks the same every 90 deg) from the bridge's ground truth
(or a perception topic), the height still to lift and the cube-to-grasp-point distance. Every
term that is not read as is declares a machine-readable ``derive`` (``tf_position``, ``sum``,
``sin_kyaw``/``cos_kyaw``, ``offset_minus``, ``distance``; ``rlstack_bundle.derive``), and
``_raw_obs`` computes the observation through those same operations, which the policy node
also uses: training and serving cannot diverge.

``scripted_expert(env)`` is a state-machine baseline (approach above, descend, close, lift to
``HOLD_HEIGHT`` and hold). It provides the demonstrations of the behaviour-cloned policy
(``rlstack_learning.bc``).
"""

from __future__ import annotations

import numpy as np

from rlstack_bundle import derive as ops
from rlstack_bundle.terms import ActTerm, ObsTerm, Source, derive
from sim_bridges.robots.panda import FINGER_JOINTS
from sim_bridges.scenes.panda_table import CUBE_SIZE, TABLE_TOP

from ..randomization import DomainRandomization
from .base import SimTaskEnv

CUBE = "red_cube"
LIFT_HEIGHT = 0.10
#: consecutive control steps the cube must stay >= LIFT_HEIGHT up (2 s at 20 Hz)
HOLD_STEPS = 40
#: the expert lifts the cube this far above its resting height, then holds it there
HOLD_HEIGHT = 0.14
MAX_DELTA = 0.015  # m per control step
_GT = Source("/sim_ground_truth/poses", "geometry_msgs/msg/PoseArray", "poses[].position", key=CUBE)
#: resting height of the cube centre (on the table top)
REST_Z = TABLE_TOP + 0.5 * CUBE_SIZE
EE_FRAME = "panda_grasptarget"
_EE_TERMS = ["ee_x", "ee_y", "ee_z"]
_CUBE_TERMS = ["cube_x", "cube_y", "cube_z"]


def _ee(axis: str) -> Source:
    # forward kinematics: the bridge publishes every link on /tf (world -> panda_link0 -> ... ->
    # panda_grasptarget), as robot_state_publisher would from /joint_states
    return Source("/tf", "tf2_msgs/msg/TFMessage", "transforms",
                  derive=derive("tf_position", parent="world", child=EE_FRAME, axis=axis))


def _cube(axis: str) -> Source:
    return Source(_GT.topic, _GT.msg_type, f"poses[].position.{axis}", key=CUBE)


class PandaLiftEnv(SimTaskEnv):
    task_name = "panda_lift"
    env_id = "RlStack/PandaLift-v0"
    scene = "panda_table"
    control_rate_hz = 20.0
    max_episode_steps = 160
    camera = "front_camera"
    obs_terms = (
        ObsTerm("ee_x", "m", "world", _ee("x"), noise_std=0.001, description="grasp point x"),
        ObsTerm("ee_y", "m", "world", _ee("y"), noise_std=0.001, description="grasp point y"),
        ObsTerm("ee_z", "m", "world", _ee("z"), noise_std=0.001, description="grasp point z"),
        ObsTerm("finger_width", "m", "panda_hand",
                Source("/joint_states", "sensor_msgs/msg/JointState", "position", key=",".join(FINGER_JOINTS),
                       derive=derive("sum")), noise_std=0.0005,
                description="gripper opening"),
        ObsTerm("cube_x", "m", "world", _cube("x"), noise_std=0.002, description="red cube centre x"),
        ObsTerm("cube_y", "m", "world", _cube("y"), noise_std=0.002, description="red cube centre y"),
        ObsTerm("cube_z", "m", "world", _cube("z"), noise_std=0.002, description="red cube centre z"),
        ObsTerm("cube_yaw_sin4", "1", "world", Source(_GT.topic, _GT.msg_type, "poses[].orientation", key=CUBE,
                                                      derive=derive("sin_kyaw", k=4)),
                description="cube yaw, 90-deg symmetric"),
        ObsTerm("cube_yaw_cos4", "1", "world", Source(_GT.topic, _GT.msg_type, "poses[].orientation", key=CUBE,
                                                      derive=derive("cos_kyaw", k=4)),
                description="cube yaw, 90-deg symmetric"),
        ObsTerm("target_dz", "m", "world",
                Source(_GT.topic, _GT.msg_type, "poses[].position.z", key=CUBE,
                       derive=derive("offset_minus", constant=round(REST_Z + LIFT_HEIGHT, 9))),
                description="height still to lift"),
        ObsTerm("ee_to_cube_dist", "m", "world", Source(_GT.topic, _GT.msg_type, "poses[].position", key=CUBE,
                                                        derive=derive("distance", a=_CUBE_TERMS, b=_EE_TERMS)),
                description="distance grasp point -> cube centre"),
    )
    act_terms = tuple(
        ActTerm(f"ee_d{a}", "m", Source("/arm/ee_delta", "geometry_msgs/msg/Vector3", a),
                limits=(-MAX_DELTA, MAX_DELTA), scale=MAX_DELTA,
                description=f"grasp point step along {a} (arm base frame)")
        for a in "xyz"
    ) + (
        ActTerm("gripper", "1", Source("/arm/gripper", "std_msgs/msg/Bool", "data", derive="open = value > 0"),
                limits=(-1.0, 1.0), scale=1.0, description="> 0 open, <= 0 close"),
    )
    default_randomization = DomainRandomization(
        mass_scale=(0.7, 1.3), friction_scale=(0.8, 1.2), action_delay_steps=(0, 1), obs_noise_scale=1.0)
    success_definition = (f"the red cube's centre stays at least {LIFT_HEIGHT * 100:g} cm above its resting height "
                          f"for {HOLD_STEPS} consecutive control steps ({HOLD_STEPS / 20:g} s) within "
                          f"160 steps (8 s); cube start uniform over x in [-0.05, 0.25] m, y in [-0.25, 0.25] m "
                          f"(30 x 50 cm, 9 cm apart from the two other cubes) with yaw uniform in +-45 deg "
                          f"(all yaws, by the cube's 90-deg symmetry)")
    card_limitations = (
        "Simulation only; the cube pose comes from the simulator's ground truth (a real rig needs a perception "
        "topic with the same fields) and the grasp point from forward kinematics (/tf). The contract's end-effector "
        "deltas keep a fixed gripper yaw, so cubes near 45 deg are grasped on their corners. The policy imitates a "
        "scripted expert: it is no better than the expert and inherits its behaviour (one grasp attempt, re-tries "
        "only if the cube is far from the hand).")

    #: the arm's body (URDF robot name) and the cube's resting height in the observation frame
    robot_name = "panda"
    rest_z = REST_Z

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        names = list(self.sim.joint_names)
        self._fingers = [names.index(j) for j in FINGER_JOINTS]
        self._rest_z = self.rest_z
        self._gripper_open = None

    def _neutral_command(self) -> np.ndarray:
        return np.array([0.0, 0.0, 0.0, 1.0])

    def _apply_command(self, command: np.ndarray) -> None:
        dx, dy, dz, grip = (float(c) for c in command)
        if dx or dy or dz:
            self.sim.set_end_effector_delta(dx, dy, dz)
        want_open = grip > 0
        if want_open != self._gripper_open:  # latched: only send changes
            self.sim.set_gripper(want_open)
            self._gripper_open = want_open

    def _task_reset(self, rng) -> None:
        self._gripper_open = None
        self._held = 0

    def sim_free_episode_start(self) -> None:
        # over ROS: the reward's resting height and the hold counter (``__init__`` never ran)
        self._rest_z = self.rest_z
        self._gripper_open = None
        self._held = 0

    def ee_position(self) -> np.ndarray:
        return np.array(self.sim.body_pose("panda_grasptarget").position)

    def _raw_obs(self) -> np.ndarray:
        # what each term's source reads (before its derive); the declared derive ops
        # (rlstack_bundle.derive, shared with the policy node) do the rest
        ee = self.ee_position()
        js = self.sim.joint_state()
        cube = self.sim.ground_truth()[CUBE]
        c = np.asarray(cube.pose.position, dtype=np.float64)
        q = tuple(float(v) for v in cube.pose.orientation)  # x, y, z, w
        read = {"ee_x": ee, "ee_y": ee, "ee_z": ee,
                "finger_width": [js.position[i] for i in self._fingers],
                "cube_x": c[0], "cube_y": c[1], "cube_z": c[2],
                "cube_yaw_sin4": q, "cube_yaw_cos4": q, "target_dz": c[2]}
        return np.array(ops.raw_vector(self.obs_terms, read), dtype=np.float64)

    def _reward_terminated(self, raw, command):
        dist, target_dz, cube_z = raw[10], raw[9], raw[6]
        lifted = cube_z - self._rest_z
        up = bool(target_dz <= 0.0)
        self._held = self._held + 1 if up else 0
        success = self._held >= HOLD_STEPS
        reward = (-dist + (0.5 if dist < 0.02 else 0.0) + 5.0 * min(max(0.0, lifted), LIFT_HEIGHT)
                  + (1.0 if up else 0.0) + (10.0 if success else 0.0))
        return reward, success, {"is_success": success, "lifted": float(lifted), "held_steps": self._held}


def scripted_expert(env: PandaLiftEnv):
    """A state machine on the observation: returns ``policy(obs) -> action``.

    Phases: move 6 cm above the cube with the gripper open; descend to the cube centre;
    close for 8 steps; lift straight up until the cube is ``HOLD_HEIGHT`` above its resting
    height, then hold it there. If the cube is more than 4 cm from the grasp point while
    closing or lifting (missed or dropped), it starts over: so it can also label the states
    a learner visits (DAgger). Fixed gripper yaw (the contract's IK keeps the
    gripper orientation), so cubes near 45 deg yaw are grasped on their corners.
    """
    state = {"phase": "approach", "t": 0}

    def act(obs):
        ee, cube = np.asarray(obs[0:3], np.float64), np.asarray(obs[4:7], np.float64)
        if env.steps == 0:
            state.update(phase="approach", t=0)
        target, grip = ee, 1.0
        if state["phase"] in ("close", "lift") and float(obs[10]) > 0.04:
            state.update(phase="approach", t=0)  # the cube is not in the hand (missed or dropped): retry
        if state["phase"] == "approach":
            target = cube + [0.0, 0.0, 0.06]
            if np.linalg.norm(target - ee) < 0.01:
                state["phase"] = "descend"
        if state["phase"] == "descend":
            # aim 1 cm below the grasp height so the commanded step stays large until the close
            # condition holds: the arm barely moves for steps under ~2 mm, and a cloned policy
            # must not learn a near-zero action just above the cube (a fixed point)
            target = cube + [0.0, 0.0, -0.01]
            if ee[2] - cube[2] < 0.008 and np.linalg.norm((cube - ee)[:2]) < 0.008:
                state.update(phase="close", t=0)
        if state["phase"] == "close":
            target, grip = ee, -1.0
            state["t"] += 1
            if state["t"] >= 8:
                state["phase"] = "lift"
        if state["phase"] == "lift":  # obs[9] = height still to go to LIFT_HEIGHT
            target, grip = ee + [0.0, 0.0, float(obs[9]) + (HOLD_HEIGHT - LIFT_HEIGHT)], -1.0
        a = np.clip((target - ee) / MAX_DELTA, -1.0, 1.0)
        return np.array([*a, grip], dtype=np.float32)

    return act


def main(argv=None) -> int:
    """``python -m rlstack_learning.envs.lift [--episodes 100] [--randomize] [--video lift.mp4]``: expert baseline."""
    import argparse

    import gymnasium as gym

    from ..evaluate import run_episodes, write_video
    from .base import EVAL_SEED_BASE

    p = argparse.ArgumentParser(description="scripted-expert baseline of the Panda lift task")
    p.add_argument("--episodes", type=int, default=100)
    p.add_argument("--randomize", action="store_true")
    p.add_argument("--video")
    a = p.parse_args(argv)
    env = gym.make(PandaLiftEnv.env_id, randomize=a.randomize, render_mode="rgb_array" if a.video else None)
    frames = [] if a.video else None
    res = run_episodes(env, scripted_expert(env.unwrapped), [EVAL_SEED_BASE + i for i in range(a.episodes)],
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
