"""Per-task training configuration (``config/train/<task>.yaml``), validated before training.

Every error names the bad field (``ConfigError: config/train/cartpole.yaml: hyperparams.ppo.n_stepz:
unknown hyperparameter for PPO ...``), and nothing is built or trained before validation passed.
"""

from __future__ import annotations

import copy
import inspect
import os
from dataclasses import dataclass
from typing import Any, Dict, Optional

import yaml

from .randomization import DomainRandomization


class ConfigError(ValueError):
    pass


def algorithms() -> Dict[str, Any]:
    from sb3_contrib import TQC
    from stable_baselines3 import A2C, DQN, PPO, SAC, TD3

    # "bc": behaviour cloning (rlstack_learning.bc) into a SAC actor: saved/loaded/exported as SAC
    return {"ppo": PPO, "a2c": A2C, "sac": SAC, "td3": TD3, "dqn": DQN, "tqc": TQC, "bc": SAC}


DISCRETE_ONLY = {"dqn"}
CONTINUOUS_ONLY = {"sac", "td3", "tqc", "bc"}
OFF_POLICY = {"sac", "td3", "dqn", "tqc"}

#: top-level keys: name -> (type(s), required, check, description)
_TOP = {
    "task": (str, True, None, "task name (the file name)"),
    "env_id": (str, True, None, "registered Gymnasium id"),
    "algo": (str, True, None, "default algorithm"),
    "seed": (int, False, lambda v: v >= 0, "training seed (>= 0)"),
    "total_timesteps": (int, True, lambda v: v > 0, "step budget (> 0)"),
    "num_envs": (int, False, lambda v: 1 <= v <= 256, "parallel envs (1..256)"),
    "vec_env": (str, False, lambda v: v in ("dummy", "subproc"), "'dummy' or 'subproc'"),
    "normalize_obs": (bool, False, None, "VecNormalize observations"),
    "normalize_reward": (bool, False, None, "VecNormalize rewards"),
    "randomize": ((bool, dict), False, None, "domain randomisation: bool or mapping"),
    "env_kwargs": (dict, False, None, "extra env constructor kwargs"),
    "eval_freq": (int, False, lambda v: v > 0, "validation every N steps (> 0)"),
    "eval_episodes": (int, False, lambda v: v > 0, "validation episodes (> 0)"),
    "stop_success_rate": ((int, float), False, lambda v: 0 < v <= 1, "stop when validation success >= this (0..1]"),
    "stop_patience": (int, False, lambda v: v >= 1, "consecutive validations above stop_success_rate (>= 1)"),
    "checkpoint_freq": (int, False, lambda v: v > 0, "checkpoint every N steps (> 0)"),
    "save_replay_buffer": (bool, False, None, "include the replay buffer in checkpoints (off-policy)"),
    "bundle": (str, False, None, "bundle name under policies/"),
    "success_floor": ((int, float), False, lambda v: 0 <= v <= 1, "CI floor on the success rate (0..1)"),
    "card_bar": ((int, float), False, lambda v: 0 <= v <= 1, "least nominal success (100 episodes) the shipped "
                 "bundle's model card must show (0..1)"),
    "hyperparams": (dict, True, None, "algo -> SB3 constructor arguments"),
}

DEFAULTS = {
    "seed": 0, "num_envs": 8, "vec_env": "dummy", "normalize_obs": True, "normalize_reward": False,
    "randomize": False, "env_kwargs": {}, "eval_freq": 10000, "eval_episodes": 10, "checkpoint_freq": 20000,
    "save_replay_buffer": False, "stop_patience": 1, "success_floor": 0.9, "card_bar": 0.99,
}

_POLICY_KWARGS = {
    "net_arch": (list, dict), "activation_fn": str, "log_std_init": (int, float), "ortho_init": bool,
    "n_critics": int, "n_quantiles": int, "share_features_extractor": bool, "squash_output": bool,
}
_ACTIVATIONS = ("tanh", "relu", "elu", "leaky_relu", "gelu", "silu")
_POSITIVE = {"n_steps", "batch_size", "n_epochs", "buffer_size", "learning_starts", "train_freq",
             "gradient_steps", "target_update_interval", "policy_delay", "top_quantiles_to_drop_per_net"}
_UNIT = {"gamma", "gae_lambda", "tau", "exploration_fraction", "exploration_final_eps",
         "exploration_initial_eps", "vf_coef", "max_grad_norm", "target_noise_clip", "target_policy_noise"}


@dataclass
class TrainConfig:
    data: Dict[str, Any]
    source: str = "<dict>"

    def __getitem__(self, key: str) -> Any:
        return self.data[key]

    def get(self, key: str, default: Any = None) -> Any:
        return self.data.get(key, default)

    @property
    def algo(self) -> str:
        return self.data["algo"]

    @property
    def algo_hyperparams(self) -> Dict[str, Any]:
        return copy.deepcopy(self.data["hyperparams"].get(self.algo, {}))


def _fail(source: str, fieldname: str, msg: str) -> None:
    raise ConfigError(f"{source}: {fieldname}: {msg}")


def _type_name(t) -> str:
    return " or ".join(x.__name__ for x in t) if isinstance(t, tuple) else t.__name__


def _check_type(source, name, value, types) -> None:
    ok_types = types if isinstance(types, tuple) else (types,)
    if isinstance(value, bool) and bool not in ok_types:
        _fail(source, name, f"expected {_type_name(types)}, got bool {value!r}")
    if int in ok_types and float in ok_types and isinstance(value, (int, float)) and not isinstance(value, bool):
        return
    if not isinstance(value, ok_types):
        _fail(source, name, f"expected {_type_name(types)}, got {type(value).__name__} {value!r}")


def validate(data: Dict[str, Any], source: str = "<dict>") -> TrainConfig:
    """Check every field; return a config with defaults filled in."""
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: expected a mapping at the top level, got {type(data).__name__}")
    for key in data:
        if key not in _TOP:
            _fail(source, key, f"unknown field; known fields: {', '.join(sorted(_TOP))}")
    for key, (types, required, check, desc) in _TOP.items():
        if key not in data:
            if required:
                _fail(source, key, f"required field missing ({desc})")
            continue
        _check_type(source, key, data[key], types)
        if check is not None and not check(data[key]):
            _fail(source, key, f"invalid value {data[key]!r}: must be {desc}")
    out = copy.deepcopy(DEFAULTS)
    out.update(copy.deepcopy(data))

    from .envs import ENVS  # also registers them

    if out["env_id"] not in ENVS:
        _fail(source, "env_id", f"unknown env {out['env_id']!r}; registered: {sorted(ENVS)}")
    env_cls = ENVS[out["env_id"]]
    try:
        DomainRandomization.make(out["randomize"], env_cls.default_randomization)
    except ValueError as exc:
        _fail(source, "randomize", str(exc))
    algos = algorithms()
    if out["algo"] not in algos:
        _fail(source, "algo", f"unknown algorithm {out['algo']!r}; choose from {sorted(algos)}")
    if env_cls.discrete and out["algo"] in CONTINUOUS_ONLY:
        _fail(source, "algo", f"{out['algo']} needs continuous actions but {out['env_id']} is discrete")
    if not env_cls.discrete and out["algo"] in DISCRETE_ONLY:
        _fail(source, "algo", f"{out['algo']} needs discrete actions but {out['env_id']} is continuous")
    for algo, hp in out["hyperparams"].items():
        if algo not in algos:
            _fail(source, f"hyperparams.{algo}", f"unknown algorithm; choose from {sorted(algos)}")
        if hp is None:
            out["hyperparams"][algo] = hp = {}
        if not isinstance(hp, dict):
            _fail(source, f"hyperparams.{algo}", f"expected a mapping, got {type(hp).__name__}")
        if algo == "bc":
            from .bc_config import check_hyperparams as check_bc

            bad = check_bc(hp)
            if bad:
                _fail(source, f"hyperparams.bc.{bad[0]}", bad[1])
            continue
        _check_hyperparams(source, algo, algos[algo], hp)
    return TrainConfig(out, source)


def _check_hyperparams(source: str, algo: str, cls: Any, hp: Dict[str, Any]) -> None:
    sig = inspect.signature(cls.__init__).parameters
    allowed = set(sig) - {"self", "env", "policy", "seed", "tensorboard_log", "verbose", "device", "_init_setup_model"}
    allowed.add("policy")  # policy class name is fine to override
    for key, value in hp.items():
        name = f"hyperparams.{algo}.{key}"
        if key not in allowed:
            _fail(source, name, f"unknown hyperparameter for {cls.__name__}; known: {', '.join(sorted(allowed))}")
        if key == "learning_rate":
            if isinstance(value, str):
                if not (value.startswith("lin_") and _is_pos_float(value[4:])):
                    _fail(source, name, f"expected a positive number or 'lin_<value>', got {value!r}")
            elif not (isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0):
                _fail(source, name, f"expected a positive number, got {value!r}")
        elif key in _POSITIVE:
            if isinstance(value, bool) or not isinstance(value, int) or value < (0 if key == "learning_starts" else 1):
                _fail(source, name, f"expected a positive integer, got {value!r}")
        elif key in _UNIT:
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
                _fail(source, name, f"expected a number in [0, 1], got {value!r}")
        elif key in ("ent_coef",):
            if not (isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0) and not (
                    isinstance(value, str) and value.startswith("auto")):
                _fail(source, name, f"expected a number >= 0 or 'auto', got {value!r}")
        elif key == "clip_range":
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < 1:
                _fail(source, name, f"expected a number in (0, 1), got {value!r}")
        elif key == "policy_kwargs":
            if not isinstance(value, dict):
                _fail(source, name, f"expected a mapping, got {type(value).__name__}")
            for k, v in value.items():
                if k not in _POLICY_KWARGS:
                    _fail(source, f"{name}.{k}", f"unknown policy kwarg; known: {', '.join(sorted(_POLICY_KWARGS))}")
                _check_type(source, f"{name}.{k}", v, _POLICY_KWARGS[k])
                if k == "activation_fn" and v not in _ACTIVATIONS:
                    _fail(source, f"{name}.{k}", f"expected one of {_ACTIVATIONS}, got {v!r}")
                if k == "net_arch" and isinstance(v, list) and not all(isinstance(x, int) and x > 0 for x in v):
                    _fail(source, f"{name}.{k}", f"expected a list of positive layer sizes, got {v!r}")


def _is_pos_float(s: str) -> bool:
    try:
        return float(s) > 0
    except ValueError:
        return False


def config_dir() -> str:
    """``config/train`` of the repo: $RLSTACK_TRAIN_CONFIG_DIR, else found from the cwd upwards,
    else the one under $RLSTACK_ROOT (set by env.sh: ``ros2 launch`` may run from any folder)."""
    env = os.environ.get("RLSTACK_TRAIN_CONFIG_DIR")
    if env:
        return env
    root = os.environ.get("RLSTACK_ROOT")
    fallback = os.path.join(root, "config", "train") if root else None
    d = os.getcwd()
    while True:
        cand = os.path.join(d, "config", "train")
        if os.path.isdir(cand):
            return cand
        parent = os.path.dirname(d)
        if parent == d:
            if fallback and os.path.isdir(fallback):
                return fallback
            raise ConfigError("cannot find config/train/ (run from the repo, source env.sh, or set "
                              "RLSTACK_TRAIN_CONFIG_DIR)")
        d = parent


def load(task_or_path: str, overrides: Optional[Dict[str, Any]] = None) -> TrainConfig:
    """Load ``config/train/<task>.yaml`` (or a path), apply CLI overrides, validate."""
    path = (task_or_path if task_or_path.endswith((".yaml", ".yml"))
            else os.path.join(config_dir(), f"{task_or_path}.yaml"))
    if not os.path.isfile(path):
        known = (sorted(f[:-5] for f in os.listdir(config_dir()) if f.endswith(".yaml"))
                 if not task_or_path.endswith(".yaml") else [])
        raise ConfigError(f"task: no config {path}" + (f"; known tasks: {', '.join(known)}" if known else ""))
    with open(path, encoding="utf-8") as f:
        try:
            data = yaml.safe_load(f)
        except yaml.YAMLError as exc:
            raise ConfigError(f"{path}: not valid YAML: {exc}") from None
    if isinstance(data, dict):
        for k, v in (overrides or {}).items():
            if v is not None:
                data[k] = v
    return validate(data, path)


def build_hyperparams(cfg: TrainConfig) -> Dict[str, Any]:
    """SB3 constructor kwargs: schedules and activation names turned into objects."""
    import torch.nn as nn
    from stable_baselines3.common.utils import LinearSchedule

    hp = cfg.algo_hyperparams
    lr = hp.get("learning_rate")
    if isinstance(lr, str):
        v = float(lr[4:])
        hp["learning_rate"] = LinearSchedule(v, 0.0, 1.0)
    pk = hp.get("policy_kwargs")
    if pk and "activation_fn" in pk:
        pk["activation_fn"] = {"tanh": nn.Tanh, "relu": nn.ReLU, "elu": nn.ELU, "leaky_relu": nn.LeakyReLU,
                               "gelu": nn.GELU, "silu": nn.SiLU}[pk["activation_fn"]]
    hp.setdefault("policy", "MlpPolicy")
    return hp
