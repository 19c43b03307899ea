"""Scene registry: scene name -> factory returning a :class:`SceneSpec`."""

from __future__ import annotations

from typing import Any, Callable, Dict, Tuple

from .ball_plate import make_ball_plate_scene
from .cartpole import make_cartpole_scene
from .home import make_home_scene
from .mobile_table import make_mobile_table_scene
from .panda_table import make_panda_table_scene
from .spec import COLORS, ObjectSpec, SceneSpec

__all__ = ["SCENES", "COLORS", "ObjectSpec", "SceneSpec", "make_scene", "register_scene", "scene_names"]

SCENES: Dict[str, Callable[..., SceneSpec]] = {
    "cartpole": make_cartpole_scene,
    "ball_plate": make_ball_plate_scene,
    "panda_table": make_panda_table_scene,
    "home": make_home_scene,
    "home_kinds": lambda **options: make_home_scene(**{"kinds": "all", **options}),
    "mobile_table": make_mobile_table_scene,
}


def scene_names() -> Tuple[str, ...]:
    """Registered scene names, sorted."""
    return tuple(sorted(SCENES))


def register_scene(name: str, factory: Callable[..., SceneSpec]) -> None:
    """Add a scene factory (e.g. from a downstream package)."""
    if name in SCENES:
        raise ValueError(f"scene '{name}' is already registered")
    SCENES[name] = factory


def make_scene(name: str, **options: Any) -> SceneSpec:
    """Build the spec of scene ``name``.

    :raises ValueError: for an unknown name, listing the valid ones
    """
    try:
        factory = SCENES[name]
    except (KeyError, TypeError):
        raise ValueError(
            f"unknown scene {name!r}; valid scenes: {', '.join(scene_names())}"
        ) from None
    return factory(**options)
