"""Cart-pole robot (classic control parameters, see ``assets/cartpole.urdf``)."""

from __future__ import annotations

from typing import Mapping, Tuple

import numpy as np

from ..contract import Pose
from .spec import RobotSpec, asset_path

CART_JOINT = "slider_to_cart"
POLE_JOINT = "cart_to_pole"


def _sample_state(rng: np.random.Generator) -> Mapping[str, Tuple[float, float]]:
    # Same perturbation as Gymnasium CartPole: every state variable ~ U(-0.05, 0.05).
    x, x_dot, theta, theta_dot = rng.uniform(-0.05, 0.05, size=4)
    return {CART_JOINT: (float(x), float(x_dot)), POLE_JOINT: (float(theta), float(theta_dot))}


def cartpole(rail_height: float = 1.0, max_force: float = 100.0) -> RobotSpec:
    """Cart on a 5.6 m rail at ``rail_height`` with a free pole (upright = 0 rad).

    The cart is force-driven (``set_cart_force``); the pole joint is passive.
    """
    return RobotSpec(
        name="cartpole",
        urdf_path=asset_path("cartpole.urdf"),
        base_pose=Pose([0.0, 0.0, rail_height]),
        fixed_base=True,
        passive_joints=(CART_JOINT, POLE_JOINT),
        sample_initial_state=_sample_state,
        cart_joint=CART_JOINT,
        cart_max_force=max_force,
        link_objects={
            "cart": ("cart", "box", "blue", (0.3, 0.2, 0.12)),
            "pole": ("pole", "cylinder", "yellow", (0.03, 0.03, 1.0)),
        },
    )
