"""What every engine's backend stores the same way: rates, sim time, the loaded scene.

:class:`BackendBase` implements the contract's trivial properties from attributes each
engine sets (``_physics_rate_hz``, ``_substeps``, ``_physics_steps``, ``_spec``, ``_caps``,
``_joint_names``, ``_closed``), so the three engines no longer carry a copy each. An engine
overrides any of them where it keeps the value elsewhere (Isaac Sim's joint order).
"""

from __future__ import annotations

import math
from typing import Any, Dict, Hashable, Mapping, Optional, Tuple

from .contract import SimBackend, physics_steps_per_control


def check_dynamics_scale(ids: Mapping[str, Hashable], mass: Mapping[str, float],
                         friction: Mapping[str, float]) -> Tuple[Dict[Hashable, float], Dict[Hashable, float]]:
    """``set_dynamics_scale``'s arguments checked and keyed by the engine's ids (``ids``: body name ->
    the engine's handle). ``KeyError`` for an unknown name, ``ValueError`` for a mass factor that is
    not finite and positive or a friction factor that is not finite and >= 0."""
    out = []
    for what, factors in (("mass", mass), ("friction", friction)):
        unknown = sorted(set(factors) - set(ids))
        if unknown:
            raise KeyError(f"{what} scale for unknown bodies {unknown}; bodies: {list(ids)}")
        for name, f in factors.items():
            ok = math.isfinite(float(f)) and (float(f) > 0 if what == "mass" else float(f) >= 0)
            if not ok:
                raise ValueError(f"{what} scale of '{name}' must be finite and {'> 0' if what == 'mass' else '>= 0'}, "
                                 f"got {f!r}")
        out.append({ids[name]: float(f) for name, f in factors.items()})
    return out[0], out[1]


class BackendBase(SimBackend):
    """:class:`SimBackend` with the properties every engine computes the same way."""

    _physics_rate_hz: float
    _substeps: int
    _physics_steps: int = 0
    _spec: Any = None
    _caps: frozenset = frozenset()
    _joint_names: Tuple[str, ...] = ()
    _closed: bool = False

    def _init_rates(self, physics_rate_hz: float, control_rate_hz: float) -> None:
        """Validate and store the physics rate and the physics steps per control step."""
        if not (math.isfinite(physics_rate_hz) and physics_rate_hz > 0):
            raise ValueError(f"physics_rate_hz must be positive, got {physics_rate_hz!r}")
        self._physics_rate_hz = float(physics_rate_hz)
        self._substeps = physics_steps_per_control(self._physics_rate_hz, control_rate_hz)

    # ------------------------------------------------------------------ time
    @property
    def sim_time(self) -> float:
        # integer step count / rate: no drift from accumulating floats
        return self._physics_steps / self._physics_rate_hz

    @property
    def physics_rate_hz(self) -> float:
        return self._physics_rate_hz

    @property
    def control_period(self) -> float:
        return self._substeps / self._physics_rate_hz

    @property
    def physics_steps_per_control(self) -> int:
        """Physics steps per control step."""
        return self._substeps

    def set_control_rate(self, control_rate_hz: float) -> None:
        self._substeps = physics_steps_per_control(self._physics_rate_hz, control_rate_hz)

    # ----------------------------------------------------------------- scene
    @property
    def scene_name(self) -> Optional[str]:
        return None if self._spec is None else self._spec.name

    @property
    def scene_spec(self) -> Any:
        """The loaded scene's description (``sim_bridges.scenes.spec.SceneSpec``: robots with their
        kinematic parameters, objects, static furniture, cameras); ``None`` before :meth:`load_scene`.
        Read-only by convention: the scene is built, changing the spec changes nothing."""
        return self._spec

    @property
    def capabilities(self) -> frozenset:
        return self._caps

    @property
    def joint_names(self) -> Tuple[str, ...]:
        return self._joint_names

    # --------------------------------------------------------------- checks
    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("backend is closed")

    def _check_loaded(self) -> None:
        self._check_open()
        if self._spec is None:
            raise RuntimeError("no scene loaded: call load_scene() first")
