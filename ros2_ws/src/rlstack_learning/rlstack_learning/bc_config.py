"""The ``algo: bc`` hyperparameters (``hyperparams.bc``): schema, defaults, check, and the scripted
experts by name. Kept apart from :mod:`rlstack_learning.bc` so that the config validator
(:mod:`rlstack_learning.config`) checks a BC config without importing the trainer (which imports
the checkpoints, which import the config: an import cycle otherwise).
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Optional, Tuple

import numpy as np


def _lift_expert(env):
    from .envs.lift import scripted_expert

    return scripted_expert(env)


def _mobile_lift_perceived_expert(env):
    from .envs.mobile_lift_perceived import perceived_expert

    return perceived_expert(env)


#: expert name -> factory(env.unwrapped) -> policy(obs) -> action (mobile_lift: lift's expert, its obs in
#: base_link; mobile_lift_perceived: an expert that sees only the held estimate and proprioception)
EXPERTS: Dict[str, Callable[[Any], Callable[[np.ndarray], np.ndarray]]] = {
    "lift": _lift_expert, "mobile_lift": _lift_expert, "mobile_lift_perceived": _mobile_lift_perceived_expert}


#: hyperparams.bc: name -> (default, type, check, description)
BC_SCHEMA: Dict[str, Tuple[Any, Any, Callable[[Any], bool], str]] = {
    "expert": ("lift", str, lambda v: v in EXPERTS, "scripted expert name"),
    "demo_episodes": (150, int, lambda v: v >= 1, "expert episodes (>= 1)"),
    "action_noise": (0.3, (int, float), lambda v: 0 <= v <= 2, "DART noise std on the executed motion actions (0..2)"),
    "nominal_fraction": (0.25, (int, float), lambda v: 0 <= v <= 1,
                         "share of episodes played without domain randomisation (0..1)"),
    "dagger_rounds": (2, int, lambda v: v >= 0, "DAgger rounds (>= 0)"),
    "dagger_episodes": (80, int, lambda v: v >= 1, "learner episodes labelled per DAgger round (>= 1)"),
    "epochs": (40, int, lambda v: v >= 1, "passes over the data per fit (>= 1)"),
    "batch_size": (256, int, lambda v: v >= 1, "minibatch size (>= 1)"),
    "learning_rate": (1e-3, (int, float), lambda v: v > 0, "Adam learning rate (> 0)"),
    "net_arch": ([256, 256], list, lambda v: all(isinstance(x, int) and x > 0 for x in v), "hidden layer sizes"),
}
BC_DEFAULTS = {k: v[0] for k, v in BC_SCHEMA.items()}


def check_hyperparams(hp: Dict[str, Any]) -> Optional[Tuple[str, str]]:
    """``(field, message)`` of the first bad ``hyperparams.bc`` entry, or ``None``."""
    for key, value in hp.items():
        if key not in BC_SCHEMA:
            return key, f"unknown hyperparameter for BC; known: {', '.join(sorted(BC_SCHEMA))}"
        _, types, check, desc = BC_SCHEMA[key]
        ok_types = types if isinstance(types, tuple) else (types,)
        if isinstance(value, bool) or not isinstance(value, ok_types) or not check(value):
            return key, f"invalid value {value!r}: must be {desc}"
    return None
