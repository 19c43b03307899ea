"""Run folders and atomic checkpoints.

``out/train/<task>/<run>/``::

    config.yaml                 resolved configuration (the run's single source of truth)
    checkpoints/step_000040000/ model.zip, vecnormalize.pkl, [replay_buffer.pkl], manifest.json
    best/                       best validation model (same files)
    final/                      model at the end of training (same files)
    validation.jsonl            one line per validation round
    tb/                         TensorBoard event files
    videos/                     mp4 of evaluation episodes

Every model folder is built in a hidden temporary folder and renamed into place
(:func:`rlstack_learning.atomic.staged_dir`); ``manifest.json`` is written last inside it
and lists the SHA-256 of every file, so a folder is trusted only when it is complete and
unchanged. A run killed at any moment therefore resumes from its newest complete checkpoint.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
from typing import Any, Dict, Optional, Tuple

from rlstack_common.atomic import sha256_file, staged_dir


class TrainingInterrupted(Exception):
    """Raised inside ``model.learn()`` (by an env or a callback) when the process is asked to stop.

    :func:`rlstack_learning.train.train` catches it, writes a checkpoint of the model as it is
    (the run resumes from there) and returns a summary with ``interrupted: true``.
    """

CKPT_PREFIX = "step_"


def save_model_dir(final: str, model, vecnorm=None, extra: Optional[Dict[str, Any]] = None,
                   replay_buffer: bool = False) -> None:
    with staged_dir(final) as tmp:
        model.save(os.path.join(tmp, "model.zip"))
        if vecnorm is not None:
            vecnorm.save(os.path.join(tmp, "vecnormalize.pkl"))
        if replay_buffer and hasattr(model, "save_replay_buffer"):
            model.save_replay_buffer(os.path.join(tmp, "replay_buffer.pkl"))
        files = {f: sha256_file(os.path.join(tmp, f)) for f in sorted(os.listdir(tmp))}
        manifest = {"timesteps": int(model.num_timesteps), "files": files, **(extra or {})}
        with open(os.path.join(tmp, "manifest.json"), "w") as f:
            json.dump(manifest, f, indent=1)


def read_model_dir(path: str) -> Optional[Dict[str, Any]]:
    """The manifest if the folder is complete and every file matches its hash, else ``None``."""
    try:
        with open(os.path.join(path, "manifest.json")) as f:
            manifest = json.load(f)
        for name, digest in manifest["files"].items():
            if sha256_file(os.path.join(path, name)) != digest:
                return None
        return manifest
    except (OSError, ValueError, KeyError, TypeError):
        return None


def checkpoint_dir(run_dir: str, timesteps: int) -> str:
    return os.path.join(run_dir, "checkpoints", f"{CKPT_PREFIX}{timesteps:09d}")


def latest_checkpoint(run_dir: str) -> Tuple[Optional[str], Optional[Dict[str, Any]]]:
    """Newest valid checkpoint of a run (corrupt or partial ones are skipped)."""
    for path in sorted(glob.glob(os.path.join(run_dir, "checkpoints", f"{CKPT_PREFIX}*")), reverse=True):
        manifest = read_model_dir(path)
        if manifest is not None:
            return path, manifest
    return None, None


def clean_partial(run_dir: str) -> int:
    """Remove temporary folders left by a killed writer; returns how many were removed."""
    n = 0
    for pattern in ("checkpoints/.*.tmp-*", ".*.tmp-*", "checkpoints/.*.old-*", ".*.old-*"):
        for path in glob.glob(os.path.join(run_dir, pattern)):
            shutil.rmtree(path, ignore_errors=True)
            n += 1
    return n


def open_run(run_dir: str, config: Dict[str, Any], resume: bool) -> Tuple[Optional[str], Optional[Dict[str, Any]]]:
    """Make ``run_dir``; resuming: drop partial folders and return the newest complete checkpoint
    and its manifest (printed); else write the run's ``config.yaml`` and return ``(None, None)``.
    Shared by both training backends (SB3, Ray)."""
    from rlstack_common import atomic

    os.makedirs(run_dir, exist_ok=True)
    if not resume:
        atomic.write_yaml(os.path.join(run_dir, "config.yaml"), config)
        return None, None
    removed = clean_partial(run_dir)
    ckpt, manifest = latest_checkpoint(run_dir)
    print(f"[train] resume {run_dir}: " + (f"from {os.path.basename(ckpt)} ({manifest['timesteps']} steps)"
                                          if ckpt else "no complete checkpoint, starting over")
          + (f"; removed {removed} partial folder(s)" if removed else ""), flush=True)
    return ckpt, manifest


def prune_checkpoints(run_dir: str, keep: int) -> None:
    paths = sorted(glob.glob(os.path.join(run_dir, "checkpoints", f"{CKPT_PREFIX}*")))
    for path in paths[:-keep] if keep > 0 else []:
        shutil.rmtree(path, ignore_errors=True)


def load_model_dir(path: str, env_id: Optional[str] = None, algo: Optional[str] = None, env=None):
    """(model, vecnorm-or-None, manifest) from a model folder; ``algo`` read from the run's config if absent."""
    import yaml
    from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

    from .config import algorithms

    manifest = read_model_dir(path)
    if manifest is None:
        raise FileNotFoundError(f"{path}: not a complete model folder (missing/corrupt manifest.json or files)")
    if algo is None or env_id is None:
        cfg_path = os.path.join(os.path.dirname(path.rstrip("/")), "config.yaml")
        if not os.path.isfile(cfg_path):
            cfg_path = os.path.join(os.path.dirname(os.path.dirname(path.rstrip("/"))), "config.yaml")
        with open(cfg_path) as f:
            cfg = yaml.safe_load(f)
        algo = algo or cfg["algo"]
        env_id = env_id or cfg["env_id"]
    cls = algorithms()[algo]
    model = cls.load(os.path.join(path, "model.zip"), env=env, device="cpu")
    vecnorm = None
    vn_path = os.path.join(path, "vecnormalize.pkl")
    if os.path.isfile(vn_path):
        import rlstack_learning  # noqa: F401  (registers the envs)

        dummy = env if env is not None else DummyVecEnv([lambda: _SpaceOnlyEnv(env_id)])
        vecnorm = VecNormalize.load(vn_path, dummy)
        vecnorm.training = False
        vecnorm.norm_reward = False
    return model, vecnorm, manifest


class _SpaceOnlyEnv:
    """Spaces of an env without building a simulator (for loading normalisation stats)."""

    def __new__(cls, env_id: str):
        import gymnasium as gym

        from .envs import ENVS

        env_cls = ENVS[env_id]

        class _E(gym.Env):
            def __init__(self):
                n_obs = len(env_cls.obs_terms)
                self.observation_space = gym.spaces.Box(-float("inf"), float("inf"), (n_obs,), "float32")
                self.action_space = (gym.spaces.Discrete(len(env_cls.act_terms[0].choices)) if env_cls.discrete
                                     else gym.spaces.Box(-1.0, 1.0, (len(env_cls.act_terms),), "float32"))

            def reset(self, *, seed=None, options=None):
                import numpy as np
                return np.zeros(self.observation_space.shape, "float32"), {}

            def step(self, action):  # pragma: no cover
                raise RuntimeError("space-only env")

        return _E()
