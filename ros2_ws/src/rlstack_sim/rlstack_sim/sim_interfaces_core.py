"""The logic of the bridge's ROS 2 standard simulation services (``simulation_interfaces``), without rclpy.

:mod:`rlstack_sim.sim_interfaces_server` turns requests into the plain values these functions take
and their :class:`Outcome` into the standard ``Result`` (``result`` code and ``error_message``).
Every refusal is one of the standard's result codes with a one-line message; nothing here raises
on bad input.

How the standard maps onto the bridge (docs/reference/simulation-interfaces.md):

* entities are the scene's objects as the ground truth names them (free objects, spawned ones and
  named robot parts such as ``cart``); their state is the ground truth, in the bridge's world frame;
* the simulation is *paused* in the standard's sense when it advances only on request: always in
  lockstep mode, and in realtime/fast mode while paused; it is *playing* otherwise;
* one simulation step is one control period of the bridge (``1 / control_rate_hz`` of sim time);
* spawnable resources are the scene's object kinds, named ``rlstack://objects/<kind>``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Iterable, List, Mapping, Optional, Sequence, Tuple

# simulation_interfaces/msg/Result (tests check these equal the generated constants)
RESULT_FEATURE_UNSUPPORTED = 0
RESULT_OK = 1
RESULT_NOT_FOUND = 2
RESULT_INCORRECT_STATE = 3
RESULT_OPERATION_FAILED = 4
# simulation_interfaces/msg/SimulationState
STATE_STOPPED, STATE_PLAYING, STATE_PAUSED, STATE_QUITTING = 0, 1, 2, 3
# SetSimulationState.Response
ALREADY_IN_TARGET_STATE, STATE_TRANSITION_ERROR, INCORRECT_TRANSITION = 101, 102, 103
# SetEntityState.Response
SET_STATE_INVALID_POSE = 101
# SpawnEntity.Response
NAME_NOT_UNIQUE, NAME_INVALID, UNSUPPORTED_FORMAT, NO_RESOURCE, NAMESPACE_INVALID = 101, 102, 103, 104, 105
SPAWN_INVALID_POSE = 109
# ResetSimulation.Request scopes
SCOPE_DEFAULT, SCOPE_TIME, SCOPE_STATE, SCOPE_SPAWNED, SCOPE_ALL = 0, 1, 2, 4, 255

#: simulation_interfaces/msg/SimulatorFeatures values the bridge serves
FEATURES: Tuple[int, ...] = (
    0,   # SPAWNING
    1,   # DELETING
    10,  # ENTITY_STATE_GETTING
    11,  # ENTITY_STATE_SETTING
    14,  # SPAWNABLES
    20,  # SIMULATION_RESET
    21,  # SIMULATION_RESET_TIME   (only together with state and spawned: a full reset)
    22,  # SIMULATION_RESET_STATE
    23,  # SIMULATION_RESET_SPAWNED
    24,  # SIMULATION_STATE_GETTING
    25,  # SIMULATION_STATE_SETTING
    26,  # SIMULATION_STATE_PAUSE
    31,  # STEP_SIMULATION_SINGLE
    32,  # STEP_SIMULATION_MULTIPLE
)
SPAWN_FORMAT = "rlstack_object_kind"
KIND_URI_PREFIX = "rlstack://objects/"
#: one StepSimulation call runs at most this many steps (a call blocks the bridge while it runs)
MAX_STEPS_PER_CALL = 1_000_000
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,63}$")
_WORLD_FRAMES = ("", "world")


@dataclass(frozen=True)
class Outcome:
    """A standard result: ``code`` (Result.result or a service's own code above 100) and ``message``."""

    code: int = RESULT_OK
    message: str = ""

    @property
    def ok(self) -> bool:
        return self.code == RESULT_OK


OK = Outcome()


def lockstep_like(mode: str) -> bool:
    """Lockstep advances only on request: the standard's paused state, always."""
    return mode == "lockstep"


def simulation_state(mode: str, paused: bool) -> int:
    return STATE_PAUSED if lockstep_like(mode) or paused else STATE_PLAYING


def plan_state_change(mode: str, paused: bool, target: int) -> Tuple[Outcome, Optional[str]]:
    """``(outcome, action)`` for SetSimulationState: action ``'pause'``, ``'play'``, ``'stop'`` (reset,
    then paused) or ``None``."""
    current = simulation_state(mode, paused)
    if target == STATE_STOPPED:
        return Outcome(RESULT_OK, "stopped: reset and paused"), "stop"
    if target == current:
        return Outcome(ALREADY_IN_TARGET_STATE, f"already {_STATE_NAMES[current]}"), None
    if target == STATE_PAUSED:
        return OK, "pause"
    if target == STATE_PLAYING:
        if lockstep_like(mode):
            return Outcome(RESULT_FEATURE_UNSUPPORTED,
                           "the bridge runs in lockstep mode: it advances only on StepSimulation; start it "
                           "with mode realtime or fast to play"), None
        return OK, "play"
    if target in (STATE_QUITTING, 4, 5):   # QUITTING, NO_WORLD, LOADING_WORLD
        return Outcome(RESULT_FEATURE_UNSUPPORTED,
                       f"state {_STATE_NAMES.get(target, target)} is not supported (the bridge's process "
                       "owns its lifetime; a scene is always loaded)"), None
    return Outcome(INCORRECT_TRANSITION, f"unknown simulation state {target}"), None


_STATE_NAMES = {STATE_STOPPED: "stopped", STATE_PLAYING: "playing", STATE_PAUSED: "paused",
                STATE_QUITTING: "quitting", 4: "no world", 5: "loading world"}


def check_step(mode: str, paused: bool, steps: int) -> Outcome:
    """StepSimulation: only while the simulation is paused (lockstep mode, or paused)."""
    if simulation_state(mode, paused) != STATE_PAUSED:
        return Outcome(RESULT_INCORRECT_STATE,
                       f"the simulation is playing (mode {mode}); pause it with SetSimulationState first")
    if steps > MAX_STEPS_PER_CALL:
        return Outcome(RESULT_OPERATION_FAILED, f"steps {steps} exceeds {MAX_STEPS_PER_CALL} per call")
    return OK


def check_reset_scope(scope: int) -> Outcome:
    """The bridge resets time, state and spawned entities together: SCOPE_DEFAULT, SCOPE_ALL or
    all three flags."""
    full = SCOPE_TIME | SCOPE_STATE | SCOPE_SPAWNED
    if scope in (SCOPE_DEFAULT, SCOPE_ALL) or (scope & full) == full:
        return OK
    return Outcome(RESULT_FEATURE_UNSUPPORTED,
                   f"reset scope {scope} is not supported: the bridge resets time, state and spawned entities "
                   "together (SCOPE_DEFAULT or SCOPE_ALL)")


def reset_seed(base_seed: int, resets_done: int) -> int:
    """The seed of the standard's n-th reset: ``base_seed + n`` (each episode starts differently,
    as the standard's state reset allows: 'may include state randomization')."""
    return int(base_seed) + int(resets_done)


def filter_entities(names: Iterable[str], pattern: str, n_categories: int = 0, has_tags: bool = False,
                    has_bounds: bool = False) -> Tuple[Outcome, List[str]]:
    """GetEntities: names matching the regular expression ``pattern`` (search, as POSIX regexec does)."""
    if n_categories or has_tags or has_bounds:
        return Outcome(RESULT_FEATURE_UNSUPPORTED,
                       "entity categories, tags and bounds filters are not supported; filter by name"), []
    try:
        rx = re.compile(pattern) if pattern else None
    except re.error as exc:
        return Outcome(RESULT_OPERATION_FAILED, f"bad name filter {pattern!r}: {exc}"), []
    return OK, sorted(n for n in names if rx is None or rx.search(n))


def _finite(values: Sequence[float]) -> bool:
    return all(math.isfinite(float(v)) for v in values)


def check_pose(position: Sequence[float], orientation: Sequence[float]) -> str:
    """'' or why the pose is invalid (non-finite, or not a unit quaternion within 1e-3)."""
    if not _finite(list(position) + list(orientation)):
        return f"pose is not finite: position {list(position)}, orientation {list(orientation)}"
    norm = math.sqrt(sum(float(v) ** 2 for v in orientation))
    if abs(norm - 1.0) > 1e-3:
        return f"orientation is not a unit quaternion (norm {norm:.6g})"
    return ""


def check_frame(frame_id: str, world_frame: str) -> str:
    if frame_id in _WORLD_FRAMES or frame_id == world_frame:
        return ""
    return f"frame '{frame_id}' is not supported: give poses in '{world_frame}' (or leave the frame empty)"


def lookup_entity(names: Iterable[str], entity: str) -> Outcome:
    names = sorted(names)
    if entity in names:
        return OK
    return Outcome(RESULT_NOT_FOUND, f"unknown entity '{entity}'; entities: {', '.join(names) or 'none'}")


def check_set_entity_state(names: Iterable[str], movable: Iterable[str], entity: str, frame_id: str,
                           world_frame: str, set_pose: bool, position: Sequence[float],
                           orientation: Sequence[float], set_twist: bool, twist: Sequence[float],
                           set_acceleration: bool, acceleration: Sequence[float]) -> Outcome:
    """SetEntityState: pose of a free object, set at rest. A non-zero twist or acceleration is
    refused (objects are placed at rest), as is any state of a robot part."""
    found = lookup_entity(names, entity)
    if not found.ok:
        return found
    if entity not in set(movable):
        return Outcome(RESULT_OPERATION_FAILED, f"entity '{entity}' is part of a robot; only free objects are placed")
    frame = check_frame(frame_id, world_frame)
    if frame:
        return Outcome(RESULT_OPERATION_FAILED, frame)
    if set_pose:
        bad = check_pose(position, orientation)
        if bad:
            return Outcome(SET_STATE_INVALID_POSE, f"entity '{entity}': {bad}")
    for flag, values, what in ((set_twist, twist, "twist"), (set_acceleration, acceleration, "acceleration")):
        if flag and (not _finite(values) or any(float(v) != 0.0 for v in values)):
            return Outcome(RESULT_FEATURE_UNSUPPORTED,
                           f"setting a non-zero {what} is not supported: objects are placed at rest")
    if not set_pose:
        return Outcome(RESULT_OK, "nothing to set (set_pose is false)")
    return OK


def kind_uri(kind: str) -> str:
    return KIND_URI_PREFIX + kind


def plan_spawn(name: str, allow_renaming: bool, uri: str, resource_string: str, namespace: str,
               frame_id: str, world_frame: str, position: Sequence[float], orientation: Sequence[float],
               existing: Iterable[str], kinds: Iterable[str]) -> Tuple[Outcome, str, str]:
    """SpawnEntity: ``(outcome, entity name, kind)``. The resource is ``rlstack://objects/<kind>``
    (or the bare kind); names follow ``[A-Za-z][A-Za-z0-9_]*`` (at most 64), and a taken or empty name
    with ``allow_renaming`` becomes ``<kind>_<n>``."""
    kinds, existing = sorted(kinds), set(existing)
    if not uri and not resource_string:
        return Outcome(NO_RESOURCE, "entity_resource has neither a uri nor a resource_string"), "", ""
    if not uri:
        return Outcome(UNSUPPORTED_FORMAT, f"resource strings are not supported; spawn a uri of GetSpawnables "
                       f"({', '.join(kind_uri(k) for k in kinds)})"), "", ""
    kind = uri[len(KIND_URI_PREFIX):] if uri.startswith(KIND_URI_PREFIX) else uri
    if "://" in kind or "/" in kind or "." in kind:
        return Outcome(UNSUPPORTED_FORMAT, f"uri '{uri}' is not an object kind of this scene; spawnable: "
                       f"{', '.join(kind_uri(k) for k in kinds) or 'none'}"), "", ""
    if kind not in kinds:
        return Outcome(RESULT_NOT_FOUND, f"unknown object kind '{kind}'; this scene spawns: "
                       f"{', '.join(kinds) or 'none'}"), "", ""
    if namespace:
        return Outcome(NAMESPACE_INVALID, f"namespace '{namespace}': spawned objects have no interfaces to "
                       "namespace; leave it empty"), "", ""
    frame = check_frame(frame_id, world_frame)
    if frame:
        return Outcome(SPAWN_INVALID_POSE, frame), "", ""
    bad = check_pose(position, orientation)
    if bad:
        return Outcome(SPAWN_INVALID_POSE, bad), "", ""
    if name and not _NAME.match(name):
        return Outcome(NAME_INVALID, f"name {name!r} is invalid: a letter, then letters, digits or _ "
                       "(at most 64)"), "", ""
    if not name or name in existing:
        if not allow_renaming:
            if not name:
                return Outcome(NAME_INVALID, "name is empty and allow_renaming is false"), "", ""
            return Outcome(NAME_NOT_UNIQUE, f"name '{name}' is taken and allow_renaming is false"), "", ""
        stem = name or kind
        n = 1
        while f"{stem}_{n}" in existing:
            n += 1
        name = f"{stem}_{n}"
    return OK, name, kind


def check_delete(names: Iterable[str], deletable: Iterable[str], entity: str) -> Outcome:
    found = lookup_entity(names, entity)
    if not found.ok:
        return found
    if entity not in set(deletable):
        return Outcome(RESULT_OPERATION_FAILED, f"entity '{entity}' is part of a robot and cannot be deleted")
    return OK


def spawnable_descriptions(templates: Mapping[str, Tuple[str, Sequence[float], str]]) -> List[Tuple[str, str]]:
    """``[(uri, description)]`` for ``{kind: (shape, size, colour)}``."""
    out = []
    for kind, (shape, size, colour) in sorted(templates.items()):
        dims = " x ".join(f"{float(s):.3g}" for s in size)
        out.append((kind_uri(kind), f"{kind}: {colour} {shape}, {dims} m (a copy of the scene's {kind})"))
    return out


