"""Training on Ray with RLlib (``python -m rlstack_learning.train --backend ray``), docs/guides/scale-out-on-ray.md.

The same tasks (Gymnasium envs), the same per-task YAML (``config/train/<task>.yaml``: the
algorithm's SB3 hyperparameters are mapped to RLlib's, :func:`algo_config`), the same run folder
layout (``checkpoints/step_*/``, ``best/``, ``final/``, ``validation.jsonl``, ``tb/``,
``summary.yaml``; each model folder holds an RLlib checkpoint under ``rllib/`` and a manifest,
written atomically like the SB3 ones) and the same bundle (:func:`export_ray_run`: the RLModule's
deterministic action with RLlib's ``MeanStdFilter`` folded into one ONNX graph, checked against
RLlib's own filter + module + action distribution to 1e-5, then :func:`export.write_bundle`).

Env runners (RLlib's sampling actors, one CPU each) are spread over the Ray cluster; the learner
runs in this process (the driver). Validation episodes run here too, on the validation seeds, with
the shared evaluation loop (:mod:`rlstack_learning.evaluate`).
"""

from __future__ import annotations

import json
import os
import pickle
import time
from typing import Any, Dict, Optional

import numpy as np

from rlstack_common import atomic
from rlstack_common.atomic import sha256_file, staged_dir

from .checkpoints import checkpoint_dir, open_run, prune_checkpoints, read_model_dir
from .config import ConfigError, TrainConfig
from .envs import ENVS, VALIDATION_SEED_BASE

#: algorithms the Ray backend trains (RLlib's new API stack)
RAY_ALGOS = ("ppo", "sac")
#: largest |ONNX - RLlib| action difference accepted at export
RAY_EXPORT_TOLERANCE = 1e-5
#: the run folder's marker (and record) of a Ray run
RAY_RUN_FILE = "ray.yaml"
ENV_NAME = "rlstack_env"


# ---------------------------------------------------------------------------- config mapping
def _env_creator(env_config: Dict[str, Any]):
    import gymnasium as gym

    import rlstack_learning  # noqa: F401  (registers the envs in every Ray worker)

    kw = dict(env_config)
    env_id = kw.pop("env_id")
    return gym.make(env_id, **kw)


def _mean_std_filter(env=None, spaces=None, device=None):
    from ray.rllib.connectors.env_to_module import MeanStdFilter

    return MeanStdFilter(clip_by_value=10.0)


def _lr(value: Any) -> float:
    # 'lin_<v>' (SB3's linear decay) starts at v; RLlib gets the constant v (docs/guides/scale-out-on-ray.md)
    return float(value[4:]) if isinstance(value, str) else float(value)


def _model_config(hp: Dict[str, Any], default_activation: str):
    from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig

    pk = hp.get("policy_kwargs") or {}
    arch = pk.get("net_arch", [64, 64])
    if isinstance(arch, dict):
        arch = arch.get("pi", [64, 64])
    return DefaultModelConfig(fcnet_hiddens=list(arch), fcnet_activation=pk.get("activation_fn", default_activation))


def algo_config(cfg: TrainConfig, env_runners: int):
    """RLlib AlgorithmConfig from a validated task config: ``num_envs`` envs spread over
    ``env_runners`` runners (one CPU each), the algorithm's SB3 hyperparameters mapped to RLlib's."""
    from ray.tune.registry import register_env

    if cfg.algo not in RAY_ALGOS:
        raise ConfigError(f"algo: the Ray backend trains {', '.join(RAY_ALGOS)}; got {cfg.algo!r}")
    if env_runners < 1:
        raise ConfigError(f"--env-runners: must be >= 1, got {env_runners}")
    register_env(ENV_NAME, _env_creator)
    hp = cfg.algo_hyperparams
    envs_per_runner = max(1, cfg["num_envs"] // env_runners)
    env_config = {"env_id": cfg["env_id"], "randomize": cfg["randomize"], **cfg["env_kwargs"]}
    if cfg.algo == "ppo":
        from ray.rllib.algorithms.ppo import PPOConfig

        n_steps = hp.get("n_steps", 2048)
        c = PPOConfig().training(
            train_batch_size_per_learner=n_steps * envs_per_runner * env_runners,
            minibatch_size=hp.get("batch_size", 64), num_epochs=hp.get("n_epochs", 10),
            gamma=hp.get("gamma", 0.99), lambda_=hp.get("gae_lambda", 0.95), lr=_lr(hp.get("learning_rate", 3e-4)),
            clip_param=hp.get("clip_range", 0.2), entropy_coeff=float(hp.get("ent_coef", 0.0)),
            vf_loss_coeff=hp.get("vf_coef", 0.5), grad_clip=hp.get("max_grad_norm", 0.5),
            use_kl_loss=False, vf_clip_param=1e6)   # as SB3's PPO: no KL term, no value clipping
        model = _model_config(hp, "tanh")
    else:
        from ray.rllib.algorithms.sac import SACConfig

        lr = _lr(hp.get("learning_rate", 3e-4))
        batch = hp.get("batch_size", 256)
        c = SACConfig().training(
            actor_lr=lr, critic_lr=lr, alpha_lr=lr, gamma=hp.get("gamma", 0.99), tau=hp.get("tau", 0.005),
            train_batch_size_per_learner=batch,
            num_steps_sampled_before_learning_starts=hp.get("learning_starts", 100),
            replay_buffer_config={"type": "PrioritizedEpisodeReplayBuffer", "capacity": hp.get("buffer_size", 10**6),
                                  "alpha": 0.0, "beta": 0.0},   # uniform, as SB3's buffer
            # SB3: gradient_steps updates of `batch` every train_freq env steps (per env)
            training_intensity=hp.get("gradient_steps", 1) * batch / max(1, hp.get("train_freq", 1)))
        model = _model_config(hp, "relu")
    c = (c.environment(ENV_NAME, env_config=env_config)
          .env_runners(num_env_runners=env_runners, num_envs_per_env_runner=envs_per_runner,
                       num_cpus_per_env_runner=1,
                       env_to_module_connector=_mean_std_filter if cfg["normalize_obs"] else None)
          .rl_module(model_config=model)
          .reporting(min_sample_timesteps_per_iteration=0)
          .debugging(seed=cfg["seed"], log_level="ERROR"))
    return c


# ---------------------------------------------------------------------------- the policy (reference + export)
class RllibPolicy:
    """An RLModule and its observation filter state: RLlib's deterministic action (the reference
    the ONNX graph must match), and the torch module that is exported."""

    def __init__(self, module, filter_state: Optional[Dict[str, Any]], action_space) -> None:
        self.module = module
        self.action_space = action_space
        self.filter = None
        if filter_state is not None:
            from ray.rllib.utils.filter import MeanStdFilter, RunningStat

            self.filter = MeanStdFilter(tuple(filter_state["shape"]), demean=filter_state["de_mean_to_zero"],
                                        destd=filter_state["de_std_to_one"], clip=filter_state["clip_by_value"])
            self.filter.running_stats = RunningStat.from_state(filter_state["running_stats"][0])

    # -- RLlib's own code path (reference)
    def act_batch(self, obs: np.ndarray) -> np.ndarray:
        import gymnasium as gym
        import torch
        from ray.rllib.utils.spaces.space_utils import unsquash_action

        x = np.asarray(obs, np.float32)
        if self.filter is not None:
            x = self.filter(x, update=False)
        with torch.no_grad():
            out = self.module.forward_inference({"obs": torch.as_tensor(x)})
            dist = self.module.get_inference_action_dist_cls().from_logits(out["action_dist_inputs"])
            a = dist.to_deterministic().sample().numpy()
        if isinstance(self.action_space, gym.spaces.Discrete):
            return a.astype(np.int64)
        return unsquash_action(a, self.action_space).astype(np.float32)

    def act(self, obs: np.ndarray):
        return self.act_batch(obs[None])[0]

    # -- the graph that is exported
    def exportable(self):
        import gymnasium as gym
        import torch
        from torch import nn

        from .onnx_export import ExportedPolicy

        module, space = self.module, self.action_space
        dist_name = module.get_inference_action_dist_cls().__name__
        discrete = isinstance(space, gym.spaces.Discrete)
        n_act = 0 if discrete else int(np.prod(space.shape))

        class Actor(nn.Module):
            def __init__(self):
                super().__init__()
                self.module = module
                if not discrete:
                    self.register_buffer("low", torch.as_tensor(space.low, dtype=torch.float32))
                    self.register_buffer("high", torch.as_tensor(space.high, dtype=torch.float32))

            def forward(self, x):
                logits = self.module.forward_inference({"obs": x})["action_dist_inputs"]
                if discrete:
                    return torch.argmax(logits, dim=1)
                mean = logits[:, :n_act]   # (mean, log_std): a static slice keeps the ONNX shape known
                # SAC too: RLlib's TorchSquashedGaussian.to_deterministic() is the loc *before* tanh, and the
                # env runner sends it through unsquash + clip like PPO's (docs/guides/scale-out-on-ray.md)
                a = self.low + (mean + 1.0) * (self.high - self.low) / 2.0    # RLlib's unsquash_action
                # a constant-shape reshape: ONNX then declares (batch, n_act), as the bundle validator checks
                return torch.maximum(torch.minimum(a, self.high), self.low).reshape(-1, n_act)

        if dist_name not in ("TorchDiagGaussian", "TorchSquashedGaussian", "TorchCategorical"):
            raise ValueError(f"don't know how to export an RLModule with {dist_name} actions")
        norm = None
        if self.filter is not None:
            norm = RllibObsNormalizer(self.filter.running_stats.mean, self.filter.running_stats.std, self.filter.clip,
                                      self.filter.demean, self.filter.destd)
        return ExportedPolicy(norm, Actor()).eval()


def _rllib_normalizer_cls():
    import torch
    from torch import nn

    class _Norm(nn.Module):
        """``clip((obs - mean) / (std + 1e-6), -clip, clip)``: RLlib ``MeanStdFilter`` semantics."""

        def __init__(self, mean, std, clip, demean=True, destd=True) -> None:
            super().__init__()
            from ray.rllib.utils.numpy import SMALL_NUMBER

            self.register_buffer("mean", torch.as_tensor(np.asarray(mean) if demean else np.zeros_like(mean),
                                                         dtype=torch.float32))
            self.register_buffer("denom", torch.as_tensor(np.asarray(std) + SMALL_NUMBER if destd else
                                                          np.ones_like(std), dtype=torch.float32))
            self.clip = float(clip) if clip else None

        def forward(self, obs):
            x = (obs - self.mean) / self.denom
            return torch.clamp(x, -self.clip, self.clip) if self.clip else x

    return _Norm


def RllibObsNormalizer(*args, **kwargs):  # noqa: N802  (a class, built lazily: torch/ray imports)
    return _rllib_normalizer_cls()(*args, **kwargs)


def policy_from_algo(algo) -> RllibPolicy:
    module = algo.get_module()
    state = algo.env_runner_group.local_env_runner.get_state().get("env_to_module_connector", {})
    fstate = state.get("MeanStdFilter", {}).get(None)
    return RllibPolicy(module, fstate, module.action_space)


def policy_from_dir(path: str) -> RllibPolicy:
    """The policy of a model folder written by :func:`save_algo_dir` (no Ray instance needed)."""
    from ray.rllib.core.rl_module.rl_module import RLModule

    if read_model_dir(path) is None:
        raise FileNotFoundError(f"{path}: not a complete model folder (missing/corrupt manifest.json or files)")
    ck = os.path.join(os.path.abspath(path), "rllib")   # RLlib reads paths as URIs: relative ones fail
    module = RLModule.from_checkpoint(os.path.join(ck, "learner_group", "learner", "rl_module", "default_policy"))
    fpath = os.path.join(ck, "env_runner", "env_to_module_connector", "MeanStdFilter", "state.pkl")
    fstate = None
    if os.path.isfile(fpath):
        with open(fpath, "rb") as f:
            fstate = pickle.load(f).get(None)
    return RllibPolicy(module, fstate, module.action_space)


# ---------------------------------------------------------------------------- model folders
def save_algo_dir(final: str, algo, timesteps: int, extra: Optional[Dict[str, Any]] = None) -> None:
    """An RLlib checkpoint under ``<final>/rllib`` + manifest (SHA-256 of every file), atomically."""
    with staged_dir(final) as tmp:
        algo.save_to_path(os.path.join(os.path.abspath(tmp), "rllib"))
        files = {}
        for root, _, names in os.walk(tmp):
            for n in sorted(names):
                p = os.path.join(root, n)
                files[os.path.relpath(p, tmp)] = sha256_file(p)
        with open(os.path.join(tmp, "manifest.json"), "w") as f:
            json.dump({"timesteps": int(timesteps), "files": files, **(extra or {})}, f, indent=1)


# ---------------------------------------------------------------------------- training
def default_env_runners(cfg: TrainConfig, cpus: int) -> int:
    """One env runner per CPU of the cluster, at most one per env."""
    return max(1, min(cfg["num_envs"], cpus))


def train_ray(cfg: TrainConfig, run_dir: str, resume: bool = False, env_runners: Optional[int] = None,
              address: Optional[str] = None, num_cpus: Optional[int] = None, progress: bool = True) -> Dict[str, Any]:
    """Train (or resume) ``cfg`` with RLlib into ``run_dir``; returns the summary (also summary.yaml)."""
    import torch

    from rlstack_common.ray_cluster import init_ray

    from .evaluate import run_episodes

    if cfg.algo not in RAY_ALGOS:   # before Ray starts
        raise ConfigError(f"algo: the Ray backend trains {', '.join(RAY_ALGOS)}; got {cfg.algo!r}")
    torch.set_num_threads(1)
    wall0 = time.perf_counter()
    cluster = init_ray(address, num_cpus)
    ckpt, manifest = open_run(run_dir, cfg.data, resume)
    runners = env_runners or default_env_runners(cfg, cluster["cpus"])
    atomic.write_yaml(os.path.join(run_dir, RAY_RUN_FILE), {"backend": "ray", "env_runners": runners,
                                                            "cluster": cluster})
    algo = algo_config(cfg, runners).build_algo()
    state = {"best": None, "streak": 0, "last_ckpt": 0, "last_eval": 0, "stopped_early": False}
    wall_before, steps = 0.0, 0
    if ckpt:
        algo.restore_from_path(os.path.join(os.path.abspath(ckpt), "rllib"))
        steps = int(manifest["timesteps"])
        wall_before = float(manifest.get("wall_time_s", 0.0))
        state.update(best=manifest.get("best"), streak=manifest.get("streak", 0), last_ckpt=steps,
                     last_eval=manifest.get("last_eval", steps))
    from torch.utils.tensorboard import SummaryWriter

    tb = SummaryWriter(os.path.join(run_dir, "tb", "ray_run"))
    eval_env = None
    steps_before, t_learn = steps, time.perf_counter()

    def wall() -> float:
        return wall_before + (time.perf_counter() - wall0)

    def extra() -> Dict[str, Any]:
        return {"wall_time_s": round(wall(), 2), "best": state["best"], "streak": state["streak"],
                "last_eval": state["last_eval"]}

    try:
        while steps < cfg["total_timesteps"]:
            r = algo.train()
            steps = int(r.get("num_env_steps_sampled_lifetime", 0)) or steps
            er = r.get("env_runners", {})
            ret = er.get("episode_return_mean")
            fps = (steps - steps_before) / max(time.perf_counter() - t_learn, 1e-9)
            if ret is not None and np.isfinite(ret):
                tb.add_scalar("rollout/ep_rew_mean", ret, steps)
            if er.get("episode_len_mean") is not None:
                tb.add_scalar("rollout/ep_len_mean", er["episode_len_mean"], steps)
            tb.add_scalar("time/fps", fps, steps)
            line = (f"[train] {steps}/{cfg['total_timesteps']} steps  "
                    f"return {ret if ret is None else round(ret, 1)}  {fps:.0f} steps/s")
            if steps - state["last_ckpt"] >= cfg["checkpoint_freq"]:
                state["last_ckpt"] = steps
                save_algo_dir(checkpoint_dir(run_dir, steps), algo, steps, extra())
                prune_checkpoints(run_dir, keep=3)
            if steps - state["last_eval"] >= cfg["eval_freq"]:
                import gymnasium as gym

                state["last_eval"] = steps
                if eval_env is None:
                    eval_env = gym.make(cfg["env_id"], randomize=cfg["randomize"], **cfg["env_kwargs"])
                seeds = [VALIDATION_SEED_BASE + i for i in range(cfg["eval_episodes"])]
                res = run_episodes(eval_env, policy_from_algo(algo).act, seeds)
                for k in ("mean_return", "success_rate", "mean_length"):
                    tb.add_scalar(f"eval/{k}", res[k], steps)
                with open(os.path.join(run_dir, "validation.jsonl"), "a") as f:
                    f.write(json.dumps({"timesteps": steps, "wall_time_s": round(wall(), 2),
                                        **{k: res[k] for k in ("success_rate", "mean_return", "mean_length")}}) + "\n")
                line += f"  validation {res['success_rate'] * 100:.0f} % ({res['mean_return']:.1f})"
                score = [res["success_rate"], res["mean_return"]]
                if state["best"] is None or score >= state["best"]:
                    state["best"] = score
                    save_algo_dir(os.path.join(run_dir, "best"), algo, steps, extra())
                stop = cfg.get("stop_success_rate")
                state["streak"] = state["streak"] + 1 if stop is not None and res["success_rate"] >= stop else 0
                if stop is not None and state["streak"] >= cfg["stop_patience"]:
                    state["stopped_early"] = True
            if progress:
                print(line, flush=True)
            if state["stopped_early"]:
                break
        learn_s = time.perf_counter() - t_learn
        final_extra = {"wall_time_s": round(wall(), 2), "best": state["best"], "stopped_early": state["stopped_early"]}
        save_algo_dir(os.path.join(run_dir, "final"), algo, steps, final_extra)
        if not os.path.isdir(os.path.join(run_dir, "best")):
            save_algo_dir(os.path.join(run_dir, "best"), algo, steps, final_extra)
    finally:
        tb.close()
        if eval_env is not None:
            eval_env.close()
        algo.stop()
    summary = {
        "task": cfg["task"], "env_id": cfg["env_id"], "algorithm": cfg.algo, "seed": cfg["seed"],
        "timesteps": steps, "budget": cfg["total_timesteps"], "stopped_early": state["stopped_early"],
        "best_validation": state["best"], "wall_time_s": round(wall(), 2),
        "fps_this_session": round((steps - steps_before) / max(learn_s, 1e-9), 1),
        "resumed_from": os.path.basename(ckpt) if ckpt else None, "interrupted": False,
        "backend": "ray", "env_runners": runners, "envs_per_env_runner": max(1, cfg["num_envs"] // runners),
        "cluster": cluster,
    }
    atomic.write_yaml(os.path.join(run_dir, "summary.yaml"), summary)
    return summary


# ---------------------------------------------------------------------------- export
def max_export_error(policy: RllibPolicy, onnx_bytes: bytes, n_obs: int, n: int = 1000, seed: int = 0) -> float:
    """Largest |ONNX - RLlib| over ``n`` random observations (N(0, 1) scaled by the filter's running std)."""
    import onnxruntime as ort

    rng = np.random.default_rng(seed)
    if policy.filter is not None:
        rs = policy.filter.running_stats
        obs = rs.mean + rng.normal(size=(n, n_obs)) * 2.0 * np.maximum(rs.std, 1e-3)
    else:
        obs = rng.normal(size=(n, n_obs))
    obs = obs.astype(np.float32)
    sess = ort.InferenceSession(onnx_bytes, providers=["CPUExecutionProvider"])
    got = sess.run(None, {"obs": obs})[0]
    ref = policy.act_batch(obs)
    return float(np.max(np.abs(np.asarray(got, np.float64) - np.asarray(ref, np.float64))))


def export_ray_run(run_dir: str, dest: str, which: str = "best", episodes: int = 100, progress: bool = True,
                   bundle_name: Optional[str] = None, ray_shards: int = 0) -> Dict[str, Any]:
    """A Ray run's model folder -> the same policy bundle as :func:`export.export_run` writes."""
    import ray
    import yaml

    from .export import write_bundle
    from .onnx_export import to_onnx_bytes

    with open(os.path.join(run_dir, "config.yaml")) as f:
        cfg = yaml.safe_load(f)
    summary, ray_run = {}, {}
    for name, target in (("summary.yaml", summary), (RAY_RUN_FILE, ray_run)):
        if os.path.isfile(os.path.join(run_dir, name)):
            with open(os.path.join(run_dir, name)) as f:
                target.update(yaml.safe_load(f) or {})
    path = os.path.join(run_dir, which)
    policy = policy_from_dir(path)
    manifest = read_model_dir(path)
    n_obs = len(ENVS[cfg["env_id"]].obs_terms)
    onnx_bytes = to_onnx_bytes(policy.exportable(), n_obs)
    err = max_export_error(policy, onnx_bytes, n_obs)
    if err > RAY_EXPORT_TOLERANCE:
        raise RuntimeError(f"ONNX export differs from the RLlib policy by {err:.3g} (> {RAY_EXPORT_TOLERANCE:g})")
    cluster = summary.get("cluster") or ray_run.get("cluster") or {}
    extra = {"training_backend": "ray-rllib", "export_reference": "RLlib",
             "ray": {"ray": ray.__version__, "rllib": ray.__version__, "nodes": cluster.get("nodes"),
                     "cpus": cluster.get("cpus"), "env_runners": summary.get("env_runners", ray_run.get("env_runners")),
                     "envs_per_env_runner": summary.get("envs_per_env_runner")}}
    return write_bundle(cfg, summary, manifest, int(manifest["timesteps"]), onnx_bytes, err, dest, episodes,
                        progress, bundle_name, which=which, run_dir=run_dir, extra_provenance=extra,
                        ray_shards=ray_shards)
