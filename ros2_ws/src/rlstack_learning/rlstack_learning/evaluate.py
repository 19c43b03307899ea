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


def run_episodes(env: gym.Env, policy: Policy, seeds: Sequence[int], frames: Optional[List[np.ndarray]] = None,
                 progress: bool = False) -> Dict[str, Any]:
    """Play one episode per seed; return per-episode and summary statistics.

    ``frames``: if given, ``env.render()`` of every step of the *first* episode is appended.
    """
    returns, lengths, successes = [], [], []
    failed_seeds: List[int] = []
    t0 = time.perf_counter()
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
        ok = bool(info.get("is_success", False))
        returns.append(ret)
        lengths.append(n)
        successes.append(ok)
        if not ok:
            failed_seeds.append(int(seed))
    n_ok = int(sum(successes))
    return {
        "episodes": len(seeds),
        "seeds": {"first": int(seeds[0]), "last": int(seeds[-1]), "count": len(seeds)} if len(seeds) else {},
        "success_rate": n_ok / max(1, len(seeds)),
        "successes": n_ok,
        "success_rate_wilson95_lower": round(wilson_lower(n_ok, len(seeds)), 4),
        "mean_return": float(np.mean(returns)) if returns else 0.0,
        "std_return": float(np.std(returns)) if returns else 0.0,
        "mean_length": float(np.mean(lengths)) if lengths else 0.0,
        "min_length": int(np.min(lengths)) if lengths else 0,
        "failed_seeds": failed_seeds[:20],
        "wall_time_s": round(time.perf_counter() - t0, 2),
    }


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
