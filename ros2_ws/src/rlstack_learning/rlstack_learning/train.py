"""Train a task with Stable-Baselines3 (in the spirit of Isaac Lab's train.py and RL Zoo).

    python -m rlstack_learning.train --task cartpole                  # config/train/cartpole.yaml
    python -m rlstack_learning.train --task ball_plate --algo sac --num-envs 4 --seed 3 --steps 200000
    python -m rlstack_learning.train --resume out/train/cartpole/ppo_s0_20250101-120000
    python -m rlstack_learning.train --task cartpole --export         # + bundle into a new policies/ folder
    python -m rlstack_learning.train --task cartpole --export --overwrite   # + bundle over policies/<bundle>
    python -m rlstack_learning.train --task cartpole --backend ray --env-runners 2    # RLlib on Ray \
(docs/guides/scale-out-on-ray.md)
    python -m rlstack_learning.train --task cartpole --backend ray --address auto     # ... on a running cluster

Outputs go to ``out/train/<task>/<run>/`` (see ``checkpoints.py``). Killing the process at any
moment and running ``--resume`` loses at most one checkpoint interval.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any, Dict, List, Optional

import yaml

from rlstack_common import atomic

from .checkpoints import TrainingInterrupted, checkpoint_dir, open_run, prune_checkpoints, save_model_dir
from .config import OFF_POLICY, ConfigError, TrainConfig, algorithms, build_hyperparams, load, validate
from .envs import VALIDATION_SEED_BASE


# ---------------------------------------------------------------------------- helpers
def make_env_fn(env_id: str, env_kwargs: Dict[str, Any], randomize: Any):
    def _thunk():
        import gymnasium as gym

        import rlstack_learning  # noqa: F401  (registers the envs in subprocesses too)

        return gym.make(env_id, randomize=randomize, **env_kwargs)

    return _thunk


def make_vec_env(cfg: TrainConfig, seed: int):
    from stable_baselines3.common.env_util import make_vec_env as sb3_make_vec_env
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

    cls = SubprocVecEnv if cfg["vec_env"] == "subproc" and cfg["num_envs"] > 1 else DummyVecEnv
    return sb3_make_vec_env(make_env_fn(cfg["env_id"], cfg["env_kwargs"], cfg["randomize"]),
                            n_envs=cfg["num_envs"], seed=seed, vec_env_cls=cls)


# ---------------------------------------------------------------------------- callbacks
def _callbacks(run_dir: str, cfg: TrainConfig, wall0: float, wall_before: float, state: Dict[str, Any]):
    from stable_baselines3.common.callbacks import BaseCallback

    from .evaluate import run_episodes, sb3_policy

    class CheckpointAndValidate(BaseCallback):
        """Atomic checkpoints every ``checkpoint_freq`` steps; validation + best model every ``eval_freq``."""

        def __init__(self):
            super().__init__()
            self.eval_env = None

        def _wall(self) -> float:
            return wall_before + (time.perf_counter() - wall0)

        def _on_training_start(self) -> None:
            self.last_ckpt = state["last_ckpt"]
            self.last_eval = state["last_eval"]

        def _on_step(self) -> bool:
            n = self.num_timesteps
            if n - self.last_ckpt >= cfg["checkpoint_freq"]:
                self.last_ckpt = n
                self.save_checkpoint()
            if n - self.last_eval >= cfg["eval_freq"]:
                self.last_eval = n
                return self.validate()
            return True

        def extra(self) -> Dict[str, Any]:
            return {"wall_time_s": round(self._wall(), 2), "best": state["best"], "streak": state["streak"],
                    "last_eval": self.last_eval}

        def save_checkpoint(self) -> None:
            vecnorm = self.model.get_vec_normalize_env()
            save_model_dir(checkpoint_dir(run_dir, self.num_timesteps), self.model, vecnorm, self.extra(),
                           replay_buffer=cfg["save_replay_buffer"] and cfg.algo in OFF_POLICY)
            prune_checkpoints(run_dir, keep=3)

        def validate(self) -> bool:
            import gymnasium as gym

            if self.eval_env is None:
                self.eval_env = gym.make(cfg["env_id"], randomize=cfg["randomize"], **cfg["env_kwargs"])
            vecnorm = self.model.get_vec_normalize_env()
            seeds = [VALIDATION_SEED_BASE + i for i in range(cfg["eval_episodes"])]
            res = run_episodes(self.eval_env, sb3_policy(self.model, vecnorm), seeds)
            self.logger.record("eval/mean_return", res["mean_return"])
            self.logger.record("eval/success_rate", res["success_rate"])
            self.logger.record("eval/mean_length", res["mean_length"])
            line = {"timesteps": self.num_timesteps, "wall_time_s": round(self._wall(), 2),
                    **{k: res[k] for k in ("success_rate", "mean_return", "mean_length")}}
            with open(os.path.join(run_dir, "validation.jsonl"), "a") as f:
                f.write(json.dumps(line) + "\n")
            score = [res["success_rate"], res["mean_return"]]
            if state["best"] is None or score >= state["best"]:
                state["best"] = score
                save_model_dir(os.path.join(run_dir, "best"), self.model, vecnorm, self.extra())
            stop = cfg.get("stop_success_rate")
            state["streak"] = state["streak"] + 1 if stop is not None and res["success_rate"] >= stop else 0
            if stop is not None and state["streak"] >= cfg["stop_patience"]:
                state["stopped_early"] = True
                return False  # ends model.learn()
            return True

        def _on_training_end(self) -> None:
            if self.eval_env is not None:
                self.eval_env.close()

    return CheckpointAndValidate()


# ---------------------------------------------------------------------------- main entry
def train(cfg: TrainConfig, run_dir: str, resume: bool = False, progress: bool = True,
          verbose: int = 0, venv_factory=None, extra_callbacks=()) -> Dict[str, Any]:
    """Train (or resume) into ``run_dir``; returns a summary dict (also written to summary.yaml).

    ``venv_factory(cfg, seed) -> VecEnv`` replaces the in-process envs (the training node
    passes lockstep envs over ROS; behaviour cloning takes its single env for the demonstrations
    and the DAgger rollouts); ``extra_callbacks`` are SB3 callbacks (progress topic; not used by
    behaviour cloning). Validation episodes always run in-process.
    """
    if cfg.algo == "bc":  # demonstrations + behaviour cloning + DAgger (minutes): a resume starts over
        from .bc import train_bc

        if resume:
            print(f"[train] resume {run_dir}: BC runs are not checkpointed; starting over", flush=True)
        rollout_env = None
        if venv_factory is not None:   # over ROS: demonstrations and DAgger rollouts on the bridge
            venv = venv_factory(cfg, cfg["seed"])
            if len(getattr(venv, "envs", ())) != 1:
                raise ConfigError("behaviour cloning plays one episode at a time: train it on one lockstep bridge "
                                  "(bridges: [/sim_bridge]), not on several or on a batch bridge")
            rollout_env = venv.envs[0]
        return train_bc(cfg, run_dir, progress=progress, rollout_env=rollout_env)
    import torch
    from stable_baselines3.common.vec_env import VecNormalize

    torch.set_num_threads(1)  # ~9x faster than the default on 2 shared cores
    wall0 = time.perf_counter()
    cls = algorithms()[cfg.algo]
    ckpt, manifest = open_run(run_dir, cfg.data, resume)

    # the seed changes on resume so the resumed envs do not replay the first episodes
    seed = cfg["seed"] + (manifest["timesteps"] if manifest else 0)
    venv = (venv_factory or make_vec_env)(cfg, seed)
    tb = os.path.join(run_dir, "tb")
    state = {"best": None, "streak": 0, "last_ckpt": 0, "last_eval": 0, "stopped_early": False}
    wall_before = 0.0
    if ckpt:
        if os.path.isfile(os.path.join(ckpt, "vecnormalize.pkl")):
            venv = VecNormalize.load(os.path.join(ckpt, "vecnormalize.pkl"), venv)
            venv.training = True
        model = cls.load(os.path.join(ckpt, "model.zip"), env=venv, device="cpu", tensorboard_log=tb)
        if os.path.isfile(os.path.join(ckpt, "replay_buffer.pkl")):
            model.load_replay_buffer(os.path.join(ckpt, "replay_buffer.pkl"))
        wall_before = float(manifest.get("wall_time_s", 0.0))
        state.update(best=manifest.get("best"), streak=manifest.get("streak", 0),
                     last_ckpt=manifest["timesteps"], last_eval=manifest.get("last_eval", manifest["timesteps"]))
    else:
        if cfg["normalize_obs"] or cfg["normalize_reward"]:
            venv = VecNormalize(venv, norm_obs=cfg["normalize_obs"], norm_reward=cfg["normalize_reward"],
                                gamma=cfg.algo_hyperparams.get("gamma", 0.99), clip_obs=10.0)
        model = cls(env=venv, seed=cfg["seed"], device="cpu", tensorboard_log=tb, verbose=verbose,
                    **build_hyperparams(cfg))
    remaining = cfg["total_timesteps"] - model.num_timesteps
    callback = _callbacks(run_dir, cfg, wall0, wall_before, state)
    t_learn = time.perf_counter()
    steps_before = model.num_timesteps
    interrupted = False
    if remaining > 0:
        try:
            model.learn(total_timesteps=remaining, callback=[callback, *extra_callbacks], progress_bar=progress,
                        reset_num_timesteps=not ckpt, tb_log_name="run")
        except TrainingInterrupted as exc:
            interrupted = True
            print(f"[train] interrupted at {model.num_timesteps} steps: {exc}", flush=True)
            if getattr(callback, "model", None) is not None:  # None: stopped before the first step
                callback.save_checkpoint()
    learn_s = time.perf_counter() - t_learn
    vecnorm = model.get_vec_normalize_env()
    wall = wall_before + (time.perf_counter() - wall0)
    extra = {"wall_time_s": round(wall, 2), "best": state["best"], "stopped_early": state["stopped_early"]}
    save_model_dir(os.path.join(run_dir, "final"), model, vecnorm, extra)
    if not os.path.isdir(os.path.join(run_dir, "best")):
        save_model_dir(os.path.join(run_dir, "best"), model, vecnorm, extra)
    venv.close()
    summary = {
        "task": cfg["task"], "env_id": cfg["env_id"], "algorithm": cfg.algo, "seed": cfg["seed"],
        "timesteps": int(model.num_timesteps), "budget": cfg["total_timesteps"],
        "stopped_early": state["stopped_early"], "best_validation": state["best"],
        "wall_time_s": round(wall, 2),
        "fps_this_session": round((model.num_timesteps - steps_before) / max(learn_s, 1e-9), 1),
        "resumed_from": os.path.basename(ckpt) if ckpt else None,
        "interrupted": interrupted,
    }
    atomic.write_yaml(os.path.join(run_dir, "summary.yaml"), summary)
    return summary


def export_destination(export: Optional[str], bundle: str, run_dir: str, overwrite: bool,
                       policies: str = "policies") -> str:
    """Where ``--export`` writes the bundle; an existing bundle folder is written over only with ``overwrite``.

    ``export`` is the ``--export`` value ("" for the default). The default is ``policies/<bundle>``; when that
    folder exists (a shipped bundle, or an earlier export) and ``overwrite`` is false, it is
    ``policies/<bundle>-<run>`` (the run folder's name), a folder of its own.

    Raises:
        ConfigError: an explicit ``export`` folder that exists and is not empty, without ``overwrite``; or a
            default destination that exists too.
    """
    def taken(path: str) -> bool:
        return os.path.exists(path) and (not os.path.isdir(path) or bool(os.listdir(path)))

    if export:
        if taken(export) and not overwrite:
            raise ConfigError(f"--export: {export} exists; give another folder, or --overwrite to replace it")
        return export
    dest = os.path.join(policies, bundle)
    if overwrite or not taken(dest):
        return dest
    dest = os.path.join(policies, f"{bundle}-{os.path.basename(os.path.normpath(run_dir))}")
    if taken(dest):
        raise ConfigError(f"--export: {dest} exists; give --export DIR, or --overwrite to replace it")
    return dest


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m rlstack_learning.train", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=__doc__.split("\n\n", 1)[1])
    p.add_argument("--task", help="config/train/<task>.yaml (or a path to a YAML file)")
    p.add_argument("--algo", help="ppo, a2c, sac, td3, tqc (continuous); ppo, a2c, dqn (discrete)")
    p.add_argument("--num-envs", type=int)
    p.add_argument("--seed", type=int)
    p.add_argument("--steps", type=int, dest="total_timesteps", help="step budget (all envs together)")
    p.add_argument("--normalize", dest="normalize_obs", action=argparse.BooleanOptionalAction, default=None,
                   help="observation normalisation (folded into the exported ONNX)")
    p.add_argument("--randomize", action=argparse.BooleanOptionalAction, default=None, help="domain randomisation")
    p.add_argument("--checkpoint-freq", type=int)
    p.add_argument("--eval-freq", type=int)
    p.add_argument("--eval-episodes", type=int)
    p.add_argument("--vec-env", choices=["dummy", "subproc"])
    p.add_argument("--out", default=os.path.join("out", "train"), help="output root (default out/train)")
    p.add_argument("--run", help="run name (default <algo>_s<seed>_<time>)")
    p.add_argument("--resume", metavar="RUN_DIR", help="continue a run from its newest complete checkpoint")
    p.add_argument("--export", nargs="?", const="", metavar="BUNDLE_DIR",
                   help="after training, export the best model to a bundle folder (default policies/<bundle>, or "
                        "policies/<bundle>-<run> when that folder exists); an existing BUNDLE_DIR is an error")
    p.add_argument("--overwrite", action="store_true",
                   help="with --export: write over an existing bundle folder (a shipped bundle included)")
    p.add_argument("--export-episodes", type=int, default=100, help="evaluation episodes for the bundle")
    p.add_argument("--video", action="store_true", help="write an mp4 of one evaluation episode")
    p.add_argument("--no-progress", action="store_true")
    p.add_argument("-v", "--verbose", type=int, default=0)
    g = p.add_argument_group("Ray (docs/guides/scale-out-on-ray.md)")
    g.add_argument("--backend", choices=["sb3", "ray"], default=None,
                   help="sb3 (default): Stable-Baselines3 in this process; ray: RLlib with env runners on Ray")
    g.add_argument("--address", help="a running Ray cluster ('auto' or <head>:6379); default: a private local instance")
    g.add_argument("--env-runners", type=int, help="RLlib env runners (one CPU each; default: one per cluster CPU, "
                   "at most num_envs)")
    g.add_argument("--num-cpus", type=int, help="CPUs of the local Ray instance (default: all)")
    g.add_argument("--ray-shards", type=int, default=0, metavar="N",
                   help="with --export: the bundle's evaluation episodes spread over N Ray tasks")
    return p.parse_args(argv)


def main(argv: Optional[List[str]] = None) -> int:
    args = parse_args(argv)
    try:
        if args.resume:
            run_dir = os.path.normpath(args.resume)
            path = os.path.join(run_dir, "config.yaml")
            if not os.path.isfile(path):
                raise ConfigError(f"--resume: {path} not found (not a run folder)")
            with open(path) as f:
                data = yaml.safe_load(f)
            if args.total_timesteps:
                data["total_timesteps"] = args.total_timesteps
            cfg = validate(data, path)
        else:
            if not args.task:
                raise ConfigError("--task: required (or --resume RUN_DIR)")
            overrides = {k: getattr(args, k) for k in ("algo", "num_envs", "seed", "total_timesteps", "normalize_obs",
                                                         "randomize", "checkpoint_freq", "eval_freq", "eval_episodes",
                                                         "vec_env")}
            cfg = load(args.task, overrides)
            run = args.run or f"{cfg.algo}_s{cfg['seed']}_{time.strftime('%Y%m%d-%H%M%S')}"
            run_dir = os.path.join(args.out, cfg["task"], run)
            if os.path.exists(os.path.join(run_dir, "config.yaml")):
                raise ConfigError(f"--run: {run_dir} exists; use --resume {run_dir} or another --run")
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    backend = args.backend or ("ray" if args.resume and os.path.isfile(os.path.join(run_dir, "ray.yaml")) else "sb3")
    if backend == "sb3" and (args.address or args.env_runners or args.num_cpus):
        print("error: --address, --env-runners and --num-cpus need --backend ray", file=sys.stderr)
        return 2
    if args.ray_shards and (args.ray_shards < 0 or args.export is None):
        print("error: --ray-shards takes N >= 1 and applies to --export", file=sys.stderr)
        return 2
    if args.overwrite and args.export is None:
        print("error: --overwrite applies to --export", file=sys.stderr)
        return 2
    if args.export is not None:
        try:   # decided before training: a run of hours never ends in a refused export
            args.export = export_destination(args.export, cfg.get("bundle") or cfg["task"], run_dir, args.overwrite)
        except ConfigError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        print(f"[train] the bundle will be exported to {args.export}", flush=True)
    print(f"[train] {cfg['task']} ({cfg['env_id']}) with {cfg.algo.upper()}"
          f"{' on Ray (RLlib)' if backend == 'ray' else ''}, {cfg['num_envs']} envs, "
          f"seed {cfg['seed']}, budget {cfg['total_timesteps']} steps -> {run_dir}", flush=True)
    if backend == "ray":
        return _main_ray(args, cfg, run_dir)
    summary = train(cfg, run_dir, resume=bool(args.resume), progress=not args.no_progress, verbose=args.verbose)
    print(f"[train] done: {summary['timesteps']} steps in {summary['wall_time_s']:.1f} s "
          f"({summary['fps_this_session']:.0f} steps/s), best validation {summary['best_validation']}", flush=True)
    if args.video:
        from .play import play_model_dir

        play_model_dir(os.path.join(run_dir, "best"), episodes=1, video=os.path.join(run_dir, "videos", "best.mp4"))
    if args.export is not None:
        from .export import export_run

        export_run(run_dir, args.export, episodes=args.export_episodes)
    return 0


def _main_ray(args: argparse.Namespace, cfg: TrainConfig, run_dir: str) -> int:
    from rlstack_common.ray_cluster import RayUnavailable, shutdown

    try:
        from .rllib_train import export_ray_run, train_ray

        summary = train_ray(cfg, run_dir, resume=bool(args.resume), env_runners=args.env_runners,
                            address=args.address, num_cpus=args.num_cpus, progress=not args.no_progress)
        print(f"[train] done: {summary['timesteps']} steps in {summary['wall_time_s']:.1f} s "
              f"({summary['fps_this_session']:.0f} steps/s, {summary['env_runners']} env runners on "
              f"{summary['cluster']['nodes']} node(s), {summary['cluster']['cpus']} CPUs), "
              f"best validation {summary['best_validation']}", flush=True)
        if args.export is not None:
            export_ray_run(run_dir, args.export, episodes=args.export_episodes, progress=not args.no_progress,
                           ray_shards=args.ray_shards)
    except (RayUnavailable, ConfigError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"[train] interrupted: continue with --resume {run_dir} (from its newest complete checkpoint)",
              file=sys.stderr, flush=True)
        return 130
    finally:
        shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
