"""Domain randomisation: masses, friction, actuator delay, observation noise.

Every task accepts ``randomize=`` (``False``, ``True`` for the task's defaults, or a dict of
:class:`DomainRandomization` fields). Per episode, from the episode seed only:

* every dynamic link's mass is scaled by ``U(mass_scale)`` (one factor per body),
* every link's lateral friction by ``U(friction_scale)`` (one factor per body),
* the action is applied ``d ~ U{action_delay_steps}`` control steps late,
* each observation term gets Gaussian noise of ``obs_noise_scale * term.noise_std`` per step.

Masses and friction go through the backend contract (``SimBackend.dynamics_bodies`` and
``set_dynamics_scale``): a "body" is the engine's own grouping (PyBullet: every simulated body,
ground and furniture included; MuJoCo: the robots together and each free object). A backend
without them (Isaac Sim) raises ``NotSupported`` when mass/friction randomisation is asked for.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Dict, Mapping, Optional, Tuple, Union


@dataclass(frozen=True)
class DomainRandomization:
    mass_scale: Tuple[float, float] = (1.0, 1.0)
    friction_scale: Tuple[float, float] = (1.0, 1.0)
    action_delay_steps: Tuple[int, int] = (0, 0)
    obs_noise_scale: float = 0.0

    def __post_init__(self) -> None:
        for name in ("mass_scale", "friction_scale", "action_delay_steps"):
            v = getattr(self, name)
            if not (isinstance(v, (tuple, list)) and len(v) == 2 and 0 <= v[0] <= v[1]):
                raise ValueError(f"domain randomisation '{name}' must be [low, high] with 0 <= low <= high, got {v!r}")
            object.__setattr__(self, name, tuple(v))
        if self.mass_scale[0] <= 0:
            raise ValueError(f"domain randomisation 'mass_scale' must be positive, got {self.mass_scale}")
        if any(int(x) != x for x in self.action_delay_steps):
            raise ValueError("domain randomisation 'action_delay_steps' must be integers, "
                             f"got {self.action_delay_steps}")
        if not self.obs_noise_scale >= 0:
            raise ValueError(f"domain randomisation 'obs_noise_scale' must be >= 0, got {self.obs_noise_scale}")

    @property
    def changes_dynamics(self) -> bool:
        return self.mass_scale != (1.0, 1.0) or self.friction_scale != (1.0, 1.0)

    @classmethod
    def make(cls, spec: Union[bool, None, Mapping[str, Any], "DomainRandomization"],
             defaults: "DomainRandomization") -> Optional["DomainRandomization"]:
        """``False``/``None`` -> off; ``True`` -> task defaults; dict -> defaults updated by it."""
        if spec is None or spec is False:
            return None
        if spec is True:
            return defaults
        if isinstance(spec, cls):
            return spec
        if isinstance(spec, Mapping):
            known = {f.name for f in dataclasses.fields(cls)}
            bad = sorted(set(spec) - known)
            if bad:
                raise ValueError(f"unknown domain randomisation field(s) {bad}; known: {sorted(known)}")
            return dataclasses.replace(defaults, **dict(spec))
        raise ValueError(f"randomize must be a bool or a mapping, got {type(spec).__name__}")

    def to_dict(self) -> Dict[str, Any]:
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in dataclasses.asdict(self).items()}
