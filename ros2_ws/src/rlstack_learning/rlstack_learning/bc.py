"""Behaviour cloning (+ DAgger) from a scripted expert, into an SB3 actor so export is unchanged.

Why not RL from scratch for lift: on the 2-core machine the Panda env runs ~450 steps/s
and SAC does ~50 gradient updates/s, so a sparse-reward grasp-and-hold needs hours to
days. The scripted expert (``envs/lift.py: scripted_expert``) succeeds 100/100, so the
lift is trained by behaviour cloning:

1. collect demonstrations from the expert, with DART-style action noise on the executed
   arm motion (the *label* is always the clean expert action) so the data covers small
   deviations from the expert's path;
2. fit the actor by regression (MSE of the deterministic action ``tanh(mu(norm(obs)))``
   to the expert action); the actor **is** an SB3 SAC actor, with the observation
   statistics in a ``VecNormalize``: the model folder is a normal SB3 model folder and
   ``export.py`` folds and exports it exactly like a PPO/SAC run (same bundle format);
3. DAgger rounds: roll out the current policy, label every visited state with the expert
   (its state machine follows the learner's observations), aggregate, refit;
4. validate each round on validation seeds; the best round is ``best/``.

A SAC fine-tuning stage could start from this actor (same class); it is not needed for the
target and not run by default.

Config (``algo: bc``, ``hyperparams.bc``): see :data:`rlstack_learning.bc_config.BC_DEFAULTS`.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any, Callable, Dict, List, Optional

import numpy as np

from rlstack_common import atomic

from .bc_config import BC_DEFAULTS, EXPERTS
from .checkpoints import _SpaceOnlyEnv, save_model_dir
from .envs import TRAIN_SEED_LIMIT, VALIDATION_SEED_BASE


# ---------------------------------------------------------------------------- data
def rollout(env, expert, seeds: List[int], policy: Optional[Callable] = None, noise: float = 0.0,
            rng: Optional[np.random.Generator] = None, progress: Optional[str] = None, env_for=None):
    """Play one episode per seed; return (obs, expert labels, successes).

    ``env_for(i)`` -> ``(env, expert)`` of episode ``i`` (to mix nominal and randomised
    episodes); default ``(env, expert)``. Executed action: ``policy(obs)`` if given (DAgger) else
    the expert action plus Gaussian noise of std ``noise`` on the arm-motion components (DART).
    Labels: the expert action.
    """
    rng = rng or np.random.default_rng(0)
    obs_l, act_l, ok = [], [], []
    it = seeds
    if progress:
        from tqdm import tqdm
        it = tqdm(seeds, desc=progress, unit="ep", leave=False)
    for i, seed in enumerate(it):
        if env_for is not None:
            env, expert = env_for(i)
        obs, _ = env.reset(seed=int(seed))
        done, info = False, {}
        while not done:
            label = np.asarray(expert(obs), np.float32)
            obs_l.append(np.asarray(obs, np.float32))
            act_l.append(label)
            if policy is not None:
                a = np.asarray(policy(obs), np.float32)
            else:
                a = label.copy()
                if noise > 0:
                    a[:-1] += rng.normal(0.0, noise, a.shape[0] - 1).astype(np.float32)
                a = np.clip(a, -1.0, 1.0)
            obs, _, term, trunc, info = env.step(a)
            done = term or trunc
        ok.append(bool(info.get("is_success", False)))
    return np.array(obs_l), np.array(act_l), ok


# ---------------------------------------------------------------------------- model
def make_model(env_id: str, net_arch: List[int], seed: int):
    """An SB3 SAC model (no env, tiny buffer) whose actor BC trains."""
    from stable_baselines3 import SAC
    from stable_baselines3.common.vec_env import DummyVecEnv

    venv = DummyVecEnv([lambda: _SpaceOnlyEnv(env_id)])
    model = SAC("MlpPolicy", venv, buffer_size=1, learning_starts=0, seed=seed, device="cpu",
                policy_kwargs={"net_arch": list(net_arch)})
    return model, venv


def make_vecnormalize(venv, obs: np.ndarray):
    from stable_baselines3.common.vec_env import VecNormalize

    vn = VecNormalize(venv, norm_obs=True, norm_reward=False, clip_obs=10.0)
    vn.obs_rms.mean = obs.mean(axis=0).astype(np.float64)
    vn.obs_rms.var = obs.var(axis=0).astype(np.float64) + 1e-6
    vn.obs_rms.count = float(len(obs))
    vn.training = False
    return vn


def fit(model, vecnorm, obs: np.ndarray, act: np.ndarray, epochs: int, batch_size: int, lr: float,
        seed: int) -> float:
    """Regress the deterministic actor output onto ``act``; returns the final mean loss."""
    import torch

    actor = model.policy.actor
    x = torch.as_tensor(vecnorm.normalize_obs(obs), dtype=torch.float32)
    y = torch.as_tensor(act, dtype=torch.float32)
    opt = torch.optim.Adam(actor.parameters(), lr=lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=epochs)
    g = torch.Generator().manual_seed(seed)
    actor.train()
    last = 0.0
    for _ in range(epochs):
        perm = torch.randperm(len(x), generator=g)
        total, n = 0.0, 0
        for i in range(0, len(x), batch_size):
            idx = perm[i:i + batch_size]
            pred = actor(x[idx], deterministic=True)
            loss = torch.mean((pred - y[idx]) ** 2)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += float(loss.detach()) * len(idx)
            n += len(idx)
        sched.step()
        last = total / max(n, 1)
    actor.eval()
    return last


def policy_fn(model, vecnorm):
    import torch

    actor = model.policy.actor

    def act(obs):
        with torch.no_grad():
            x = torch.as_tensor(vecnorm.normalize_obs(np.asarray(obs, np.float32)[None]), dtype=torch.float32)
            return actor(x, deterministic=True).numpy()[0]

    return act


# ---------------------------------------------------------------------------- training
def train_bc(cfg, run_dir: str, progress: bool = True, rollout_env=None) -> Dict[str, Any]:
    """Demonstrations -> BC -> DAgger rounds, into ``run_dir`` (same layout as an SB3 run).

    ``rollout_env``: play the demonstrations and the DAgger rollouts on this env instead of
    in-process ones (the training node passes a lockstep env over ROS; nominal only, as domain
    randomisation needs the simulator). Its owner closes it. Validation stays in-process."""
    import gymnasium as gym
    import torch

    from .evaluate import run_episodes

    torch.set_num_threads(1)
    torch.manual_seed(cfg["seed"])
    wall0 = time.perf_counter()
    os.makedirs(run_dir, exist_ok=True)
    atomic.write_yaml(os.path.join(run_dir, "config.yaml"), cfg.data)
    hp = dict(BC_DEFAULTS, **(cfg["hyperparams"].get("bc") or {}))
    rng = np.random.default_rng(cfg["seed"])
    if rollout_env is not None and cfg["randomize"]:
        raise ValueError("over ROS the rollouts are nominal: domain randomisation needs the simulator "
                         "(randomize: false)")
    env = rollout_env if rollout_env is not None else gym.make(cfg["env_id"], randomize=cfg["randomize"],
                                                               **cfg["env_kwargs"])
    expert = EXPERTS[hp["expert"]](env.unwrapped)
    nom_env = gym.make(cfg["env_id"], randomize=False, **cfg["env_kwargs"]) if cfg["randomize"] else env
    nom_expert = EXPERTS[hp["expert"]](nom_env.unwrapped)
    # validation: nominal and (if training with it) randomised; a round scores its worse condition
    val_envs = {"nominal": gym.make(cfg["env_id"], randomize=False, **cfg["env_kwargs"])}
    if cfg["randomize"]:
        val_envs["randomized"] = gym.make(cfg["env_id"], randomize=cfg["randomize"], **cfg["env_kwargs"])
    n_nom = hp["nominal_fraction"] if cfg["randomize"] else 0.0

    def env_for(i):  # every k-th episode nominal, k = 1 / nominal_fraction
        if n_nom > 0 and (i % max(1, int(round(1 / n_nom)))) == 0:
            return nom_env, nom_expert
        return env, expert
    model, venv = make_model(cfg["env_id"], hp["net_arch"], cfg["seed"])
    draw = lambda n: [int(s) for s in rng.integers(0, TRAIN_SEED_LIMIT, n)]  # noqa: E731
    val_seeds = [VALIDATION_SEED_BASE + i for i in range(cfg["eval_episodes"])]
    log = os.path.join(run_dir, "validation.jsonl")
    best, stopped, streak, steps = None, False, 0, 0
    stop = cfg.get("stop_success_rate")
    try:
        obs, act, ok = rollout(env, expert, draw(hp["demo_episodes"]), noise=hp["action_noise"], rng=rng,
                               progress="demonstrations" if progress else None, env_for=env_for)
        steps += len(obs)
        print(f"[bc] {len(ok)} expert demonstrations (DART noise {hp['action_noise']}): {len(obs)} samples, "
              f"expert success {np.mean(ok) * 100:.0f} % with noise", flush=True)
        vecnorm = make_vecnormalize(venv, obs)  # statistics of the expert's state distribution, kept fixed
        for rnd in range(hp["dagger_rounds"] + 1):
            if rnd > 0:
                o2, a2, ok2 = rollout(env, expert, draw(hp["dagger_episodes"]), policy=policy_fn(model, vecnorm),
                                      progress=f"dagger {rnd}" if progress else None, env_for=env_for)
                obs, act = np.concatenate([obs, o2]), np.concatenate([act, a2])
                steps += len(o2)
                print(f"[bc] DAgger round {rnd}: learner success {np.mean(ok2) * 100:.0f} % on its "
                      f"{len(ok2)} episodes, {len(obs)} samples in total", flush=True)
            loss = fit(model, vecnorm, obs, act, hp["epochs"], hp["batch_size"], hp["learning_rate"],
                       cfg["seed"] + rnd)
            model.num_timesteps = steps
            results = {k: run_episodes(e, policy_fn(model, vecnorm), val_seeds) for k, e in val_envs.items()}
            res = min(results.values(), key=lambda r: (r["success_rate"], r["mean_return"]))
            wall = time.perf_counter() - wall0
            line = {"round": rnd, "timesteps": steps, "samples": int(len(obs)), "loss": round(loss, 6),
                    "wall_time_s": round(wall, 2),
                    **{k: res[k] for k in ("success_rate", "mean_return", "mean_length")},
                    **{f"success_rate_{k}": r["success_rate"] for k, r in results.items()}}
            with open(log, "a") as f:
                f.write(json.dumps(line) + "\n")
            print(f"[bc] round {rnd}: loss {loss:.4f}, validation success "
                  + ", ".join(f"{k} {r['success_rate'] * 100:.0f} %" for k, r in results.items())
                  + f" ({len(val_seeds)} episodes each), {wall:.0f} s", flush=True)
            score = [res["success_rate"], res["mean_return"]]
            extra = {"wall_time_s": round(wall, 2), "best": score, "round": rnd}
            if best is None or score >= best:
                best = score
                save_model_dir(os.path.join(run_dir, "best"), model, vecnorm, extra)
            save_model_dir(os.path.join(run_dir, "final"), model, vecnorm, extra)
            streak = streak + 1 if stop is not None and res["success_rate"] >= stop else 0
            if stop is not None and streak >= cfg["stop_patience"] and rnd < hp["dagger_rounds"]:
                stopped = True
                break
    finally:
        if rollout_env is None:
            env.close()
        if nom_env is not env:
            nom_env.close()
        for e in val_envs.values():
            e.close()
    wall = time.perf_counter() - wall0
    summary = {
        "task": cfg["task"], "env_id": cfg["env_id"], "algorithm": "bc", "seed": cfg["seed"],
        "timesteps": int(steps), "budget": cfg["total_timesteps"], "stopped_early": stopped,
        "best_validation": best, "wall_time_s": round(wall, 2),
        "fps_this_session": round(steps / max(wall, 1e-9), 1), "resumed_from": None,
        "samples": int(len(obs)),
    }
    atomic.write_yaml(os.path.join(run_dir, "summary.yaml"), summary)
    return summary
