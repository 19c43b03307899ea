"""Spawning and deleting the scene's object kinds at run time (backend-independent part).

A loaded scene's free objects (mass > 0) define what can be spawned: one template per object
``kind`` ("cube", "ball", "duck", ...), the first object of that kind in the scene. A spawned
object is that template with a new name and pose. ``reset`` restores the scene as it was
loaded: spawned objects disappear and deleted ones come back.
"""

from __future__ import annotations

import dataclasses
import math
import re
from typing import Dict, Iterable

from .contract import Pose
from .scenes.spec import ObjectSpec

__all__ = ["spawn_templates", "spawned_spec", "check_spawn", "check_delete", "NAME_PATTERN"]

#: valid entity names: what ROS names and MuJoCo/PyBullet names both accept
NAME_PATTERN = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,63}$")


def spawn_templates(objects: Iterable[ObjectSpec]) -> Dict[str, ObjectSpec]:
    """``kind -> template`` from a scene's objects (free ones only, first of each kind)."""
    out: Dict[str, ObjectSpec] = {}
    for obj in objects:
        if obj.mass > 0 and obj.kind not in out:
            out[obj.kind] = obj
    return out


def check_spawn(name: str, kind: str, pose: Pose, existing: Iterable[str], templates: Dict[str, ObjectSpec]) -> None:
    """One-line ``ValueError`` for a name that is taken or invalid, an unknown kind or a bad pose."""
    if not isinstance(name, str) or not NAME_PATTERN.match(name):
        raise ValueError(f"entity name {name!r} is invalid (a letter, then letters, digits or _; at most 64)")
    if name in set(existing):
        raise ValueError(f"entity name '{name}' is taken")
    if kind not in templates:
        raise ValueError(f"unknown object kind '{kind}'; this scene spawns: {', '.join(sorted(templates)) or 'none'}")
    values = list(pose.position) + list(pose.orientation)
    if not all(math.isfinite(float(v)) for v in values):
        raise ValueError(f"pose of '{name}' is not finite: {values}")
    if abs(math.sqrt(sum(float(v) ** 2 for v in pose.orientation)) - 1.0) > 1e-3:
        raise ValueError(f"orientation of '{name}' is not a unit quaternion: {list(pose.orientation)}")


def check_delete(name: str, deletable: Iterable[str]) -> None:
    deletable = sorted(deletable)
    if name not in deletable:
        raise ValueError(f"unknown entity '{name}'; deletable: {', '.join(deletable) or 'none'}")


def spawned_spec(template: ObjectSpec, name: str, pose: Pose) -> ObjectSpec:
    """The template renamed and placed at ``pose`` (a unit quaternion is normalised exactly)."""
    q = [float(v) for v in pose.orientation]
    norm = math.sqrt(sum(v * v for v in q))
    return dataclasses.replace(template, name=name, pose=Pose(list(pose.position), [v / norm for v in q]))
