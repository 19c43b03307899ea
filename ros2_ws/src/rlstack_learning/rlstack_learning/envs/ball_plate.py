"""Ball-on-plate balancing on the ``ball_plate`` scene.

The plate is tilted by position-controlled pitch (about x) and roll (about y) joints.
Episodes start with the ball up to 8 cm off centre (the scene's seeded placement) rolling
at up to 0.15 m/s in a random direction; they last 10 s (300 steps at 30 Hz).

Observation (6): ball position x, y in the world frame and its velocity by finite
difference of consecutive positions over one control period (zero on the first step),
read at deployment from the bridge's sim-only ground truth ``/sim_ground_truth/poses``
(``geometry_msgs/PoseArray``, poses sorted by object name; ``ball`` is the first), and the
measured plate angles from ``/joint_states``. On a real rig the ball pose would come from
a perception topic with the same fields; the finite difference is what a node computes.
Action (2): plate pitch and roll targets in [-0.25, 0.25] rad on ``/ball_plate/angles``
(``geometry_msgs/Vector3``: x = pitch, y = roll).

Reward: ``1 - d/0.15 - 0.05 |a|^2`` per step (d = distance from the centre). Terminated when
the ball leaves the plate (|x| or |y| > 0.15 m, or it drops below the plate).
"""

from __future__ import annotations

import numpy as np

from rlstack_bundle.terms import ActTerm, ObsTerm, Source
from sim_bridges.robots.ball_plate import BALL_DIAMETER, PITCH_JOINT, PLATE_HEIGHT, PLATE_SIZE, ROLL_JOINT, TILT_LIMIT

from ..randomization import DomainRandomization
from .base import SimTaskEnv

HALF = 0.5 * PLATE_SIZE
MAX_START_SPEED = 0.15
_GT = "geometry_msgs/msg/PoseArray"
_JS = "sensor_msgs/msg/JointState"
_ANGLES = "/ball_plate/angles"
_V3 = "geometry_msgs/msg/Vector3"


def _gt(field: str, derive: str = None) -> Source:
    return Source("/sim_ground_truth/poses", _GT, field, key="ball", derive=derive)


_FD = "finite difference of consecutive samples over one control period (1/control_rate_hz); 0 on the first sample"


class BallPlateEnv(SimTaskEnv):
    task_name = "ball_plate"
    env_id = "RlStack/BallPlate-v0"
    scene = "ball_plate"
    control_rate_hz = 30.0
    max_episode_steps = 300
    camera = "overhead_camera"
    obs_terms = (
        ObsTerm("ball_x", "m", "world", _gt("poses[].position.x"), noise_std=0.001,
                description="ball centre x (plate centre at x = y = 0)"),
        ObsTerm("ball_y", "m", "world", _gt("poses[].position.y"), noise_std=0.001,
                description="ball centre y"),
        ObsTerm("ball_vx", "m/s", "world", _gt("poses[].position.x", derive=_FD), noise_std=0.01,
                description="ball velocity x (finite difference)"),
        ObsTerm("ball_vy", "m/s", "world", _gt("poses[].position.y", derive=_FD), noise_std=0.01,
                description="ball velocity y (finite difference)"),
        ObsTerm("plate_pitch", "rad", "stand", Source("/joint_states", _JS, "position", key=PITCH_JOINT),
                noise_std=0.002, description="measured plate pitch (about x)"),
        ObsTerm("plate_roll", "rad", "gimbal", Source("/joint_states", _JS, "position", key=ROLL_JOINT),
                noise_std=0.002, description="measured plate roll (about y)"),
    )
    act_terms = (
        ActTerm("plate_pitch_target", "rad", Source(_ANGLES, _V3, "x"), limits=(-TILT_LIMIT, TILT_LIMIT),
                scale=TILT_LIMIT, description="plate pitch target (about x)"),
        ActTerm("plate_roll_target", "rad", Source(_ANGLES, _V3, "y"), limits=(-TILT_LIMIT, TILT_LIMIT),
                scale=TILT_LIMIT, description="plate roll target (about y)"),
    )
    default_randomization = DomainRandomization(
        mass_scale=(0.7, 1.3), friction_scale=(0.7, 1.3), action_delay_steps=(0, 1), obs_noise_scale=1.0)
    io_notes = (
        "PoseArray has no names: 'key' is the object name; poses are sorted by name (the bridge's "
        "/sim_ground_truth/markers carries the same order with the names in 'ns'), so 'ball' is index 0",
        "set the bridge's ground_truth_rate_hz to the control rate (30 Hz) so every control step sees a new ball pose",
    )

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        names = list(self.sim.joint_names)
        self._idx = [names.index(PITCH_JOINT), names.index(ROLL_JOINT)]
        self._prev_xy = np.zeros(2)
        self._first = True

    def _task_reset(self, rng: np.random.Generator) -> None:
        speed = rng.uniform(0.0, MAX_START_SPEED)
        heading = rng.uniform(-np.pi, np.pi)
        v = speed * np.array([np.cos(heading), np.sin(heading), 0.0])
        w = np.cross([0.0, 0.0, 1.0], v) / (0.5 * BALL_DIAMETER)  # rolling without slipping
        try:
            self.sim.set_object_velocity("ball", v, w)
        except NotImplementedError:   # a backend without it: the ball starts at rest
            pass
        self._first = True

    def _apply_command(self, command: np.ndarray) -> None:
        self.sim.set_plate_angles(float(command[0]), float(command[1]))

    def _raw_obs(self) -> np.ndarray:
        ball = self.sim.ground_truth()["ball"]
        xyz = np.asarray(ball.pose.position)
        xy = xyz[:2]
        vel = np.zeros(2) if self._first else (xy - self._prev_xy) * self.control_rate_hz
        self._first = False
        self._prev_xy = xy.copy()
        self._z = float(xyz[2])
        js = self.sim.joint_state()
        return np.array([xy[0], xy[1], vel[0], vel[1], js.position[self._idx[0]], js.position[self._idx[1]]])

    def _reward_terminated(self, raw, command):
        x, y = raw[0], raw[1]
        off = bool(abs(x) > HALF or abs(y) > HALF or self._z < PLATE_HEIGHT - 0.05)
        d = float(np.hypot(x, y))
        a = command / self.act_terms[0].scale
        reward = 1.0 - d / HALF - 0.05 * float(a @ a)
        return reward, off, {"distance": d}
