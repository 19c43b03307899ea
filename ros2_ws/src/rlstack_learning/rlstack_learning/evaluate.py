"""Evaluation loops shared by training (validation), export (model cards), play and tests.

A policy is any callable ``obs (n_obs,) float32 -> action`` (network output, as fed to
``env.step``). Episodes use explicit seeds, so results are reproducible and the seed ranges
of training, validation and evaluation never overlap (see ``envs.base``).
"""

from __future__ import annotations

import math
import time
from typing import Any, Callable, Dict, List, Optional, Sequence

import gymnasium as gym
import numpy as np

Policy = Callable[[np.ndarray], Any]


def wilson_lower(successes: int, n: int, z: float = 1.96) -> float:
    """95 % Wilson score lower bound of a success rate."""
    if n == 0:
        return 0.0
    p = successes / n
    denom = 1 + z * z / n
    centre = p + z * z / (2 * n)
    margin = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, (centre - margin) / denom)


def play_episodes(env: gym.Env, policy: Policy, seeds: Sequence[int], frames: Optional[List[np.ndarray]] = None,
                  progress: bool = False) -> List[Dict[str, Any]]:
    """Play one episode per seed; one record ``{seed, return, length, success}`` per episode.

    ``frames``: if given, ``env.render()`` of every step of the *first* episode is appended.
    """
    records: List[Dict[str, Any]] = []
    iterator = seeds
    if progress:
        from tqdm import tqdm
        iterator = tqdm(seeds, desc="evaluating", unit="ep", leave=False)
    for k, seed in enumerate(iterator):
        obs, _ = env.reset(seed=int(seed))
        if frames is not None and k == 0:
            frames.append(env.render())
        ret, n, done, info = 0.0, 0, False, {}
        while not done:
            obs, r, terminated, truncated, info = env.step(policy(obs))
            ret += r
            n += 1
            done = terminated or truncated
            if frames is not None and k == 0:
                frames.append(env.render())
        records.append({"seed": int(seed), "return": float(ret), "length": n,
                        "success": bool(info.get("is_success", False))})
    return records


def summarize_episodes(records: Sequence[Dict[str, Any]], wall_time_s: float) -> Dict[str, Any]:
    """Summary statistics of episode records (in seed order), as :func:`run_episodes` returns them."""
    returns = [r["return"] for r in records]
    lengths = [r["length"] for r in records]
    n_ok = int(sum(r["success"] for r in records))
    seeds = [r["seed"] for r in records]
    return {
        "episodes": len(records),
        "seeds": {"first": int(seeds[0]), "last": int(seeds[-1]), "count": len(seeds)} if seeds else {},
        "success_rate": n_ok / max(1, len(records)),
        "successes": n_ok,
        "success_rate_wilson95_lower": round(wilson_lower(n_ok, len(records)), 4),
        "mean_return": float(np.mean(returns)) if returns else 0.0,
        "std_return": float(np.std(returns)) if returns else 0.0,
        "mean_length": float(np.mean(lengths)) if lengths else 0.0,
        "min_length": int(np.min(lengths)) if lengths else 0,
        "failed_seeds": [r["seed"] for r in records if not r["success"]][:20],
        "wall_time_s": round(wall_time_s, 2),
    }


def run_episodes(env: gym.Env, policy: Policy, seeds: Sequence[int], frames: Optional[List[np.ndarray]] = None,
                 progress: bool = False) -> Dict[str, Any]:
    """Play one episode per seed; return per-episode and summary statistics.

    ``frames``: if given, ``env.render()`` of every step of the *first* episode is appended.
    """
    t0 = time.perf_counter()
    records = play_episodes(env, policy, seeds, frames=frames, progress=progress)
    return summarize_episodes(records, time.perf_counter() - t0)


def write_video(path: str, frames: List[np.ndarray], fps: float) -> None:
    """mp4 (H.264 through imageio-ffmpeg), written atomically."""
    import os
    import tempfile

    import imageio.v2 as imageio

    frames = [f for f in frames if f is not None]
    if not frames:
        raise ValueError("no frames to write (env has no camera or render_mode is not 'rgb_array')")
    d = os.path.dirname(os.path.abspath(path))
    os.makedirs(d, exist_ok=True)
    fd, tmp = tempfile.mkstemp(suffix=".mp4", dir=d, prefix=".video-")
    os.close(fd)
    mask = os.umask(0)
    os.umask(mask)
    os.chmod(tmp, 0o666 & ~mask)
    try:
        with imageio.get_writer(tmp, fps=fps, codec="libx264", quality=7, macro_block_size=8) as w:
            for f in frames:
                w.append_data(np.asarray(f))
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def onnx_policy(bundle) -> Policy:
    """Policy from a loaded :class:`rlstack_bundle.bundle.Bundle`."""
    return bundle.act


def sb3_policy(model, vecnorm=None) -> Policy:
    def act(obs: np.ndarray):
        x = vecnorm.normalize_obs(obs[None]) if vecnorm is not None else obs[None]
        a, _ = model.predict(x, deterministic=True)
        return a[0]

    return act


def env_kwargs_arg(text: str) -> Dict[str, Any]:
    """argparse ``type`` of ``--env-kwargs``: a YAML mapping of env options ('' -> {}); anything else is
    a usage error (exit 2)."""
    import argparse

    import yaml

    value = yaml.safe_load(text) if text else {}
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"must be a YAML mapping, got {text!r}")
    return value


# ---------------------------------------------------------------------------- ONNX episodes, optionally on Ray
def onnx_episodes(env_id: str, onnx_bytes: bytes, seeds: Sequence[int], randomize: Any = False,
                  backend: str = "pybullet", progress: bool = False,
                  env_kwargs: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """Episodes of an ONNX policy (onnxruntime, one thread) in a fresh env: ``{"records", "domain_randomization"}``.
    ``env_kwargs``: the env's own options on top (e.g. ``{"lego_fraction": 1.0}``: another target).

    The unit of work of both the single-process and the sharded evaluation (a Ray task runs this).
    """
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = opts.inter_op_num_threads = 1
    sess = ort.InferenceSession(onnx_bytes, opts, providers=["CPUExecutionProvider"])

    def act(obs):
        return sess.run(None, {"obs": obs[None].astype(np.float32)})[0][0]

    # "module:env_id" is Gymnasium's way to have the module that registers the id imported first (a
    # fresh Ray worker has not imported rlstack_learning)
    env = gym.make(env_id if ":" in env_id else f"rlstack_learning:{env_id}", randomize=randomize, backend=backend,
                   **(env_kwargs or {}))
    try:
        records = play_episodes(env, act, seeds, progress=progress)
        dr = env.unwrapped.dr.to_dict() if randomize else None
    finally:
        env.close()
    return {"records": records, "domain_randomization": dr}


def evaluate_onnx_on_ray(env_id: str, onnx_bytes: bytes, seeds: Sequence[int], randomize: Any = False,
                         shards: int = 2, backend: str = "pybullet",
                         env_kwargs: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """The same evaluation as :func:`onnx_episodes` + :func:`summarize_episodes`, its seeds cut into
    ``shards`` contiguous slices, each played by a Ray task (one CPU, anywhere on the cluster).
    Episodes are seeded, so the merged result equals the single-process one episode for episode;
    ``ray.init`` must have been called (:func:`rlstack_common.ray_cluster.init_ray`)."""
    from rlstack_common.ray_cluster import cluster_info, require_ray
    from rlstack_common.ray_cluster import shards as cut

    ray = require_ray()
    remote = ray.remote(num_cpus=1, max_retries=1)(onnx_episodes)
    t0 = time.perf_counter()
    blob = ray.put(onnx_bytes)
    parts = cut(list(seeds), shards)
    results = ray.get([remote.remote(env_id, blob, part, randomize, backend, False, env_kwargs) for part in parts])
    records = [r for res in results for r in res["records"]]
    out = summarize_episodes(records, time.perf_counter() - t0)
    out["domain_randomization"] = results[0]["domain_randomization"] if results else None
    out["ray"] = {**cluster_info(), "shards": len(parts)}
    return out


def main(argv=None) -> int:
    """``python -m rlstack_learning.evaluate BUNDLE [--episodes 100] [--randomize] [--ray-shards N [--address A]]``"""
    import argparse
    import json
    import os
    import sys

    p = argparse.ArgumentParser(prog="python -m rlstack_learning.evaluate",
                                description="Evaluate a policy bundle's policy.onnx on its task's env (evaluation "
                                            "seeds, never used in training); with --ray-shards the episodes are "
                                            "spread over Ray tasks and merged into the same result.")
    p.add_argument("bundle", help="bundle folder, e.g. policies/cartpole")
    p.add_argument("--episodes", type=int, default=100)
    p.add_argument("--randomize", action="store_true", help="with the env's domain randomisation")
    p.add_argument("--backend", default="pybullet", help="simulator backend of the env (pybullet, mujoco)")
    p.add_argument("--ray-shards", type=int, default=0, metavar="N",
                   help="spread the episodes over N Ray tasks (0: one process, the default)")
    p.add_argument("--address", help="a running Ray cluster ('auto' or <head>:6379); default: a local instance")
    p.add_argument("--num-cpus", type=int, help="CPUs of the local Ray instance (default: all)")
    p.add_argument("--json", help="also write the result to this file")
    p.add_argument("--env-kwargs", type=env_kwargs_arg, default={}, help="YAML mapping of env options (as "
                   "rlstack_learning.play), e.g. \"{lego_fraction: 1.0}\" "
                   "(mobile_lift_perceived: the brick as the target)")
    a = p.parse_args(argv)
    if a.episodes < 1:
        p.error("--episodes must be >= 1")
    env_kwargs = a.env_kwargs
    if a.ray_shards < 0:
        p.error("--ray-shards must be >= 0")
    from rlstack_bundle.bundle import BundleError, load

    from .envs.base import EVAL_SEED_BASE

    try:
        b = load(a.bundle)
    except (BundleError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    with open(os.path.join(b.path, "policy.onnx"), "rb") as f:
        onnx_bytes = f.read()
    seeds = [EVAL_SEED_BASE + i for i in range(a.episodes)]
    env_id = b.io["env_id"]
    if a.ray_shards:
        from rlstack_common.ray_cluster import RayUnavailable, init_ray, shutdown

        try:
            init_ray(a.address, a.num_cpus)
        except RayUnavailable as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        try:
            res = evaluate_onnx_on_ray(env_id, onnx_bytes, seeds, a.randomize, a.ray_shards, a.backend, env_kwargs)
        finally:
            shutdown()
    else:
        t0 = time.perf_counter()
        one = onnx_episodes(env_id, onnx_bytes, seeds, a.randomize, a.backend, progress=True, env_kwargs=env_kwargs)
        res = summarize_episodes(one["records"], time.perf_counter() - t0)
        res["domain_randomization"] = one["domain_randomization"]
    res["bundle"] = b.path
    if env_kwargs:
        res["env_kwargs"] = env_kwargs
    print(json.dumps(res, indent=1))
    print(f"\n| bundle | episodes | success | 95 % lower | mean return | wall s | shards |\n"
          "|---|---|---|---|---|---|---|\n"
          f"| {os.path.basename(os.path.normpath(b.path))} | {res['episodes']} | {res['success_rate'] * 100:.1f} % "
          f"| {res['success_rate_wilson95_lower'] * 100:.1f} % | {res['mean_return']:.1f} | {res['wall_time_s']:.1f} "
          f"| {res.get('ray', {}).get('shards', 1)} |")
    if a.json:
        from rlstack_common import atomic

        atomic.write_text(a.json, json.dumps(res, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
