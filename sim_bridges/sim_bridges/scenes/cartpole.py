"""``cartpole``: the classic balancing task, seen from the side."""

from __future__ import annotations

from ..geometry import look_at_optical
from ..robots.cartpole import cartpole
from ..robots.spec import CameraSpec
from .spec import SceneSpec

RAIL_HEIGHT = 1.0


def make_cartpole_scene(max_force: float = 100.0) -> SceneSpec:
    """Cart-pole only, no floor: nothing collides, so stepping is as cheap as it gets.

    :param max_force: |force| accepted by ``set_cart_force`` (N)
    """
    camera = CameraSpec(
        name="side_camera",
        pose=look_at_optical([0.0, -4.0, RAIL_HEIGHT + 0.3], [0.0, 0.0, RAIL_HEIGHT + 0.3]),
        far=8.0,
    )
    return SceneSpec(
        name="cartpole",
        robots=(cartpole(rail_height=RAIL_HEIGHT, max_force=max_force),),
        cameras=(camera,),
        ground_plane=False,
    )
