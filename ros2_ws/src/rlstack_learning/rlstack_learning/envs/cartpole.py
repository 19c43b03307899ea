"""Cart-pole balancing on the ``cartpole`` scene (PyBullet through ``sim_bridges``).

Observation (4): cart position/velocity and pole angle/rate, read at deployment from
``/joint_states`` (joints ``slider_to_cart`` and ``cart_to_pole``).
Action: horizontal cart force in [-10, 10] N on ``/cartpole/force`` (``std_msgs/Float64``);
the discrete variant (for DQN) pushes with -10 or +10 N, like Gymnasium's CartPole.
Reward +1 per step; terminated when |pole angle| > 12 deg or |cart| > 2.4 m; truncated at
500 steps (8.3 s at 60 Hz). Success: the 500 steps are reached.
"""

from __future__ import annotations

import numpy as np

from rlstack_bundle.terms import ActTerm, ObsTerm, Source
from sim_bridges.robots.cartpole import CART_JOINT, POLE_JOINT

from ..randomization import DomainRandomization
from .base import SimTaskEnv

MAX_FORCE = 10.0
THETA_LIMIT = 12.0 * np.pi / 180.0
X_LIMIT = 2.4

_JS = "sensor_msgs/msg/JointState"
_FORCE_TOPIC = Source("/cartpole/force", "std_msgs/msg/Float64", "data")


def _joint(field: str, joint: str) -> Source:
    return Source("/joint_states", _JS, field, key=joint)


class CartPoleEnv(SimTaskEnv):
    task_name = "cartpole"
    env_id = "RlStack/CartPole-v0"
    scene = "cartpole"
    control_rate_hz = 60.0
    max_episode_steps = 500
    reset_mode = "snapshot"  # exact for this contact-free scene, and sub-millisecond
    camera = "side_camera"
    obs_terms = (
        ObsTerm("cart_position", "m", "rail", _joint("position", CART_JOINT), noise_std=0.005,
                description="cart position along the rail (+x), 0 = centre"),
        ObsTerm("cart_velocity", "m/s", "rail", _joint("velocity", CART_JOINT), noise_std=0.02,
                description="cart velocity along the rail"),
        ObsTerm("pole_angle", "rad", "cart", _joint("position", POLE_JOINT), noise_std=0.005,
                description="pole angle from upright, positive about +y"),
        ObsTerm("pole_rate", "rad/s", "cart", _joint("velocity", POLE_JOINT), noise_std=0.02,
                description="pole angular velocity"),
    )
    act_terms = (
        ActTerm("cart_force", "N", _FORCE_TOPIC, limits=(-MAX_FORCE, MAX_FORCE), scale=MAX_FORCE,
                description="horizontal force on the cart (+x)"),
    )
    default_randomization = DomainRandomization(
        mass_scale=(0.8, 1.2), friction_scale=(0.8, 1.2), action_delay_steps=(0, 1), obs_noise_scale=1.0)
    #: the termination rule of :meth:`_reward_terminated` as joint limits (|position| > limit), so a
    #: batch bridge can end and reset an episode in the step call itself (``BatchLockstepVecEnv``)
    end_joint_limits = {CART_JOINT: X_LIMIT, POLE_JOINT: THETA_LIMIT}

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        names = list(self.sim.joint_names)
        self._idx = [names.index(CART_JOINT), names.index(POLE_JOINT)]

    def _apply_command(self, command: np.ndarray) -> None:
        self.sim.set_cart_force(float(command[0]))

    def _raw_obs(self) -> np.ndarray:
        js = self.sim.joint_state()
        c, p = self._idx
        return np.array([js.position[c], js.velocity[c], js.position[p], js.velocity[p]])

    def _reward_terminated(self, raw, command):
        x, _, theta, _ = raw
        terminated = bool(abs(theta) > THETA_LIMIT or abs(x) > X_LIMIT)
        return 1.0, terminated, {}


class CartPoleDiscreteEnv(CartPoleEnv):
    """Two actions: push left (-10 N) or right (+10 N). For DQN."""

    env_id = "RlStack/CartPoleDiscrete-v0"
    discrete = True
    act_terms = (
        ActTerm("cart_force", "N", _FORCE_TOPIC, limits=(-MAX_FORCE, MAX_FORCE),
                choices=(-MAX_FORCE, MAX_FORCE), description="horizontal force on the cart (+x)"),
    )

    def _neutral_command(self) -> np.ndarray:
        return np.zeros(1)
