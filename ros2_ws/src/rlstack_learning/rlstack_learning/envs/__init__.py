"""rlstack task environments, registered with Gymnasium on import of this module (and by
``rlstack_learning`` itself whenever gymnasium is imported: see its ``ENTRY_POINTS``)."""

from .ball_plate import BallPlateEnv
from .ball_plate_pixels import BallPlatePixelsEnv
from .base import EVAL_SEED_BASE, TRAIN_SEED_LIMIT, VALIDATION_SEED_BASE, SimTaskEnv
from .cartpole import CartPoleDiscreteEnv, CartPoleEnv

#: task name -> env class (the CLI's --task names a config in config/train/, whose env_id is one of these)
ENVS = {
    CartPoleEnv.env_id: CartPoleEnv,
    CartPoleDiscreteEnv.env_id: CartPoleDiscreteEnv,
    BallPlateEnv.env_id: BallPlateEnv,
    BallPlatePixelsEnv.env_id: BallPlatePixelsEnv,
}

try:
    from .lift import PandaLiftEnv

    ENVS[PandaLiftEnv.env_id] = PandaLiftEnv
except ImportError:  # pragma: no cover - lift env not written yet
    pass

try:
    from .mobile_lift import MobileLiftEnv
    from .mobile_lift_perceived import MobileLiftPerceivedEnv

    ENVS[MobileLiftEnv.env_id] = MobileLiftEnv
    ENVS[MobileLiftPerceivedEnv.env_id] = MobileLiftPerceivedEnv
except ImportError:  # pragma: no cover - sim_bridges without the mobile_table scene
    pass


def register_all() -> None:
    import gymnasium as gym

    for env_id, cls in ENVS.items():
        if env_id not in gym.registry:
            gym.register(env_id, entry_point=f"{cls.__module__}:{cls.__name__}")


register_all()

__all__ = ["ENVS", "register_all", "SimTaskEnv", "EVAL_SEED_BASE", "TRAIN_SEED_LIMIT", "VALIDATION_SEED_BASE"]
