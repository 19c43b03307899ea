"""Evaluate a policy bundle or a training checkpoint in sim, optionally writing an mp4.

    python -m rlstack_learning.play policies/cartpole --episodes 20
    python -m rlstack_learning.play policies/ball_plate --randomize --video out/ball_plate.mp4
    python -m rlstack_learning.play out/train/cartpole/<run>/best          # a model folder (SB3)
    python -m rlstack_learning.play policies/mobile_lift --env-kwargs "{target_source: live}"  # env options

Episodes use evaluation seeds (never used in training) unless --seed-base is given.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any, Dict, Optional

import gymnasium as gym

from .envs import EVAL_SEED_BASE
from .evaluate import env_kwargs_arg, run_episodes, write_video


def _play(env_id: str, policy, episodes: int, randomize: bool, video: Optional[str], seed_base: int,
          env_kwargs: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    env = gym.make(env_id, randomize=randomize, render_mode="rgb_array" if video else None, **(env_kwargs or {}))
    try:
        frames = [] if video else None
        res = run_episodes(env, policy, [seed_base + i for i in range(episodes)], frames=frames)
        if video:
            write_video(video, frames, fps=env.metadata["render_fps"])
            res["video"] = video
    finally:
        env.close()
    return res


def play_bundle(path: str, episodes: int = 10, randomize: bool = False, video: Optional[str] = None,
                seed_base: int = EVAL_SEED_BASE, env_kwargs: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    from rlstack_bundle.bundle import load

    b = load(path)
    policy = b.act
    specs = b.image_specs
    if specs:   # a pixel bundle: the env's Dict observation {"image": stacked frames, "state": scalar terms}
        (spec,) = specs
        policy = lambda obs: b.act(obs["state"], {spec.input: obs["image"]})  # noqa: E731
    return _play(b.io["env_id"], policy, episodes, randomize, video, seed_base, env_kwargs)


def play_model_dir(path: str, episodes: int = 10, randomize: bool = False, video: Optional[str] = None,
                   seed_base: int = EVAL_SEED_BASE) -> Dict[str, Any]:
    import yaml

    from .checkpoints import load_model_dir
    from .evaluate import sb3_policy

    model, vecnorm, _ = load_model_dir(path)
    run_dir = os.path.dirname(path.rstrip("/"))
    cfg_path = os.path.join(run_dir, "config.yaml")
    if not os.path.isfile(cfg_path):
        cfg_path = os.path.join(os.path.dirname(run_dir), "config.yaml")
    with open(cfg_path) as f:
        env_id = yaml.safe_load(f)["env_id"]
    return _play(env_id, sb3_policy(model, vecnorm), episodes, randomize, video, seed_base)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m rlstack_learning.play", description=__doc__.split("\n\n")[0])
    p.add_argument("path", help="bundle folder (policies/<name>) or model folder (best/, final/, checkpoints/step_*)")
    p.add_argument("--episodes", type=int, default=10)
    p.add_argument("--randomize", action="store_true", help="task's default domain randomisation")
    p.add_argument("--video", help="mp4 path: records the first episode")
    p.add_argument("--seed-base", type=int, default=EVAL_SEED_BASE)
    p.add_argument("--env-kwargs", type=env_kwargs_arg, default={},
                   help="YAML mapping of env options, e.g. \"{target_source: live}\" or "
                   "\"{perception_error: {xy_std: 0.0, z_std: 0.0, yaw_std_deg: 0.0}}\" (mobile_lift)")
    a = p.parse_args(argv)
    env_kwargs = a.env_kwargs
    if os.path.isfile(os.path.join(a.path, "io.yaml")):
        res = play_bundle(a.path, a.episodes, a.randomize, a.video, a.seed_base, env_kwargs)
    else:
        res = play_model_dir(a.path, a.episodes, a.randomize, a.video, a.seed_base)
    print(f"success {res['successes']}/{res['episodes']} ({res['success_rate'] * 100:.1f} %), "
          f"mean return {res['mean_return']:.1f}, mean length {res['mean_length']:.1f}"
          + (f", video {res['video']}" if res.get("video") else ""))
    if res["failed_seeds"]:
        print(f"failed seeds: {res['failed_seeds']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
