#!/usr/bin/env python3
"""Benchmark the learning stack.

* ``env_steps_per_s``: env steps per second in process (SB3 ``DummyVecEnv``, random actions)
  for 1, 2 and 8 envs, per task (and ``SubprocVecEnv`` with 2 envs = the 2 cores);
* ``train_fps``: PPO training steps per second (cart-pole and ball-on-plate configs,
  8 envs, ``torch.set_num_threads(1)``), collection + updates;
* ``inference_us``: microseconds per single-observation call of a shipped bundle's policy,
  onnxruntime (the deployed path) vs the same exported torch module;
* ``ros_lockstep`` (skip with ``--no-ros``): env steps/s of the lockstep env over ROS
  (a real ``sim_bridge`` process in lockstep mode on a private domain; ``verify=before``
  = steps=0 sync then step, ``after`` = one call per step) next to the same env in
  process (1 env), and PPO training fps over ROS vs in process with identical settings
  (1 env, ``n_steps`` 256, the task config's other PPO hyperparameters). ``transport=request``:
  the command and the observation travel in the step call (one round trip per step).
* ``ros_batched`` (skip with ``--no-ros``): a ``batch_bridge`` with 8 envs behind
  ``BatchLockstepVecEnv`` (one round trip per batch step) against the in-process 8-env
  ``DummyVecEnv`` in the same run (env steps/s and the ratio), and PPO with the task config
  (8 envs) over the batch bridge against the same PPO in process.

Best of a few repeats (shared 2-core machine). JSON on stdout, markdown table on stderr.

Usage::

    python bench/bench_learning.py [--quick] [--no-ros] [--ros-only]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "ros2_ws", "src", "rlstack_learning"))

import numpy as np  # noqa: E402
import torch  # noqa: E402

torch.set_num_threads(1)

import rlstack_learning  # noqa: E402,F401

TASKS = {"cartpole": "RlStack/CartPole-v0", "ball_plate": "RlStack/BallPlate-v0"}


def env_rate(env_id: str, n_envs: int, steps: int, subproc: bool = False, repeats: int = 3) -> float:
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

    venv = make_vec_env(env_id, n_envs=n_envs, seed=0, vec_env_cls=SubprocVecEnv if subproc else DummyVecEnv)
    rng = np.random.default_rng(0)
    actions = rng.uniform(-0.3, 0.3, (steps, n_envs) + venv.action_space.shape).astype(np.float32)
    venv.reset()
    best = 0.0
    for _ in range(repeats):
        t0 = time.perf_counter()
        for a in actions:
            venv.step(a)
        best = max(best, steps * n_envs / (time.perf_counter() - t0))
    venv.close()
    return best


def train_fps(task: str, steps: int) -> float:
    from stable_baselines3 import PPO
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import VecNormalize

    from rlstack_learning.config import build_hyperparams, load

    cfg = load(os.path.join(REPO, "config", "train", f"{task}.yaml"), {"algo": "ppo"})
    venv = VecNormalize(make_vec_env(cfg["env_id"], n_envs=cfg["num_envs"], seed=0,
                                     env_kwargs={"randomize": cfg["randomize"]}))
    model = PPO(env=venv, seed=0, device="cpu", **build_hyperparams(cfg))
    t0 = time.perf_counter()
    model.learn(steps)
    fps = model.num_timesteps / (time.perf_counter() - t0)
    venv.close()
    return fps


ROS_TASKS = {"cartpole": ("RlStack/CartPole-v0", "cartpole", 60.0),
             "ball_plate": ("RlStack/BallPlate-v0", "ball_plate", 30.0)}


class _RosBench:
    """A lockstep bridge process on a private domain + a client node (context manager)."""

    def __init__(self, scene: str, rate: float, batch: int = 0, with_objects: bool = True,
                 reset_mode: str = "rebuild") -> None:
        import tempfile
        from pathlib import Path

        from rlstack_testing.domain import lease_domain_id
        from rlstack_testing.processes import ProcessGroup

        self.lease = lease_domain_id()
        self.group = ProcessGroup(self.lease.domain_id, Path(tempfile.mkdtemp(prefix="bench_learning_")))
        if batch:
            self.group.start_node("rlstack_sim", "batch_bridge",
                                  params_file=os.path.join(REPO, "launch", "params", "batch_bridge.yaml"),
                                  params={"scene": scene, "num_envs": batch, "control_rate_hz": rate,
                                          "with_objects": with_objects, "reset_mode": reset_mode})
            return
        self.group.start_node("rlstack_sim", "sim_bridge",
                              params_file=os.path.join(REPO, "launch", "params", "sim_bridge.yaml"),
                              params={"scene": scene, "mode": "lockstep", "camera_enabled": False,
                                      "control_rate_hz": rate, "publish_rate_hz": rate, "ground_truth_rate_hz": rate})

    def __enter__(self):
        import rclpy

        self.context = rclpy.Context()
        rclpy.init(context=self.context, domain_id=self.lease.domain_id)
        self.node = rclpy.create_node("bench_learning_client", context=self.context)
        return self

    def env(self, env_id: str, verify: str = "before", transport: str = "topics"):
        from rlstack_learning.ros.lockstep_env import LockstepEnv

        return LockstepEnv(env_id, self.node, verify=verify, timeout_s=30.0, discovery_timeout_s=60.0,
                           transport=transport)

    def __exit__(self, *exc):
        import rclpy

        self.node.destroy_node()
        rclpy.shutdown(context=self.context)
        self.group.stop_all()
        self.lease.release()


def _env_loop_rate(env, steps: int, repeats: int = 2) -> float:
    rng = np.random.default_rng(0)
    env.reset(seed=0)
    best = 0.0
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(steps):
            _, _, term, trunc, _ = env.step(rng.uniform(-0.3, 0.3, env.action_space.shape).astype(np.float32))
            if term or trunc:
                env.reset()
        best = max(best, steps / (time.perf_counter() - t0))
    return best


def _ppo_1env(cfg, venv, steps: int) -> float:
    from stable_baselines3 import PPO
    from stable_baselines3.common.vec_env import VecNormalize

    from rlstack_learning.config import build_hyperparams

    hp = build_hyperparams(cfg)
    hp.update(n_steps=256, batch_size=min(hp.get("batch_size", 64), 256))
    model = PPO(env=VecNormalize(venv), seed=0, device="cpu", **hp)
    t0 = time.perf_counter()
    model.learn(steps)
    return model.num_timesteps / (time.perf_counter() - t0)


def ros_lockstep(task: str, steps: int, train_steps: int) -> dict:
    import gymnasium as gym
    from stable_baselines3.common.monitor import Monitor
    from stable_baselines3.common.vec_env import DummyVecEnv

    from rlstack_learning.config import load

    env_id, scene, rate = ROS_TASKS[task]
    out = {}
    local = gym.make(env_id)
    out["in_process_env_steps_per_s"] = round(_env_loop_rate(local, steps))
    local.close()
    with _RosBench(scene, rate) as rb:
        for verify in ("before", "after"):
            env = rb.env(env_id, verify)
            out[f"ros_env_steps_per_s_verify_{verify}"] = round(_env_loop_rate(env, steps))
            out[f"late_commands_verify_{verify}"] = env.late_commands
            out[f"sync_calls_verify_{verify}"] = env.sync_calls
            env.close()
        env = rb.env(env_id, transport="request")
        out["ros_env_steps_per_s_request"] = round(_env_loop_rate(env, steps))
        env.close()
        if train_steps:
            cfg = load(os.path.join(REPO, "config", "train", f"{task}.yaml"), {"algo": "ppo", "randomize": False})
            env = rb.env(env_id, "before")
            out["ros_ppo_train_fps"] = round(_ppo_1env(cfg, DummyVecEnv([lambda: Monitor(env)]), train_steps))
            env.close()
            env = rb.env(env_id, transport="request")
            out["ros_ppo_train_fps_request"] = round(_ppo_1env(cfg, DummyVecEnv([lambda: Monitor(env)]), train_steps))
            env.close()
            out["in_process_ppo_train_fps"] = round(_ppo_1env(cfg, DummyVecEnv([lambda: Monitor(gym.make(env_id))]),
                                                              train_steps))
    return out


def _vec_loop_rate(venv, steps: int, repeats: int = 2) -> float:
    rng = np.random.default_rng(0)
    venv.seed(0)
    venv.reset()
    n = venv.num_envs
    best = 0.0
    for _ in range(repeats):
        actions = rng.uniform(-0.3, 0.3, (steps, n) + venv.action_space.shape).astype(np.float32)
        t0 = time.perf_counter()
        for a in actions:
            venv.step(a)
        best = max(best, steps * n / (time.perf_counter() - t0))
    return best


def _ppo(cfg, venv, steps: int) -> float:
    from stable_baselines3 import PPO
    from stable_baselines3.common.vec_env import VecNormalize

    from rlstack_learning.config import build_hyperparams

    model = PPO(env=VecNormalize(venv, gamma=cfg.algo_hyperparams.get("gamma", 0.99)), seed=0, device="cpu",
                **build_hyperparams(cfg))
    t0 = time.perf_counter()
    model.learn(steps)
    return model.num_timesteps / (time.perf_counter() - t0)


def ros_batched(task: str, n_envs: int, steps: int, train_steps: int) -> dict:
    """Same-run: the in-process n-env DummyVecEnv and PPO, then the same over a batch bridge."""
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import VecMonitor

    from rlstack_learning.config import load
    from rlstack_learning.ros.batch_env import BatchLockstepVecEnv

    env_id, scene, rate = ROS_TASKS[task]
    out = {"num_envs": n_envs}
    local = make_vec_env(env_id, n_envs=n_envs, seed=0)
    out["in_process_env_steps_per_s"] = round(_vec_loop_rate(local, steps))
    local.close()
    cfg = load(os.path.join(REPO, "config", "train", f"{task}.yaml"),
               {"algo": "ppo", "randomize": False, "num_envs": n_envs})
    if train_steps:
        out["in_process_ppo_train_fps"] = round(_ppo(cfg, make_vec_env(env_id, n_envs=n_envs, seed=0), train_steps))
    from rlstack_learning.envs import ENVS
    from rlstack_learning.ros.io import ObsReader

    cls = ENVS[env_id]
    reads_objects = bool(ObsReader(cls.obs_terms, cls.control_rate_hz).pose_topics)
    out["bridge_with_objects"] = reads_objects   # cart-pole reads joints only: its bridge answers without objects
    # the bridge resets as the in-process env does (cart-pole: from a snapshot, exact there)
    out["bridge_reset_mode"] = cls.reset_mode if cls.reset_mode in ("rebuild", "snapshot") else "rebuild"
    with _RosBench(scene, rate, batch=n_envs, with_objects=reads_objects, reset_mode=out["bridge_reset_mode"]) as rb:
        venv = BatchLockstepVecEnv(env_id, rb.node, timeout_s=30.0, discovery_timeout_s=60.0)
        out["ros_env_steps_per_s"] = round(_vec_loop_rate(venv, steps))
        if train_steps:
            out["ros_ppo_train_fps"] = round(_ppo(cfg, VecMonitor(venv), train_steps))
        venv.close()
    out["env_ratio"] = round(out["ros_env_steps_per_s"] / out["in_process_env_steps_per_s"], 2)
    if train_steps:
        out["ppo_ratio"] = round(out["ros_ppo_train_fps"] / out["in_process_ppo_train_fps"], 2)
    return out


def _inference(bundle_dir: str, calls: int, run_dir_model: str = None) -> dict:
    import onnxruntime as ort

    from rlstack_bundle.bundle import load

    b = load(bundle_dir)
    obs = np.random.default_rng(0).normal(size=(b.obs_dim,)).astype(np.float32)
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = opts.inter_op_num_threads = 1
    sess = ort.InferenceSession(os.path.join(bundle_dir, "policy.onnx"), opts, providers=["CPUExecutionProvider"])
    feed = {"obs": obs[None]}

    def best_us(fn, repeats=5):
        for _ in range(200):
            fn()
        best = float("inf")
        for _ in range(repeats):
            t0 = time.perf_counter()
            for _ in range(calls):
                fn()
            best = min(best, (time.perf_counter() - t0) / calls * 1e6)
        return best

    out = {"onnxruntime": best_us(lambda: sess.run(None, feed))}
    # the same graph in torch: rebuild the exported module from the training run if it is here
    run = b.provenance.get("run_dir")
    model_dir = os.path.join(REPO, run, b.provenance.get("model", "best")) if run else None
    if model_dir and os.path.isdir(model_dir):
        from rlstack_learning.checkpoints import load_model_dir
        from rlstack_learning.onnx_export import exportable

        model, vecnorm, _ = load_model_dir(model_dir)
        module = exportable(model, vecnorm.obs_rms if vecnorm is not None else None)
        x = torch.as_tensor(obs[None])
        with torch.inference_mode():
            out["torch"] = best_us(lambda: module(x))
            out["sb3_predict"] = best_us(lambda: model.predict(
                vecnorm.normalize_obs(obs[None]) if vecnorm else obs[None], deterministic=True))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    from rlstack_common.results_record import add_record_argument, command_line, record
    add_record_argument(ap)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--no-ros", action="store_true", help="skip the over-ROS lockstep measurements")
    ap.add_argument("--ros-only", action="store_true", help="only the over-ROS lockstep measurements")
    ap.add_argument("--batched-only", action="store_true", help="of the over-ROS measurements, only the batched ones")
    a = ap.parse_args()
    steps = 300 if a.quick else 2000
    res = {"machine": {"cpu_count": os.cpu_count(), "platform": platform.platform(), "torch": str(torch.__version__)},
           "env_steps_per_s": {}, "train_fps": {}, "inference_us": {}, "ros_lockstep": {}, "ros_batched": {}}
    if not a.no_ros:
        for task in ROS_TASKS:
            if not a.batched_only:
                res["ros_lockstep"][task] = ros_lockstep(task, 300 if a.quick else 2000,
                                                         (1024 if a.quick else 4096) if task == "cartpole" else 0)
            res["ros_batched"][task] = ros_batched(task, 8, 100 if a.quick else 500, 4096 if a.quick else 16384)
    for task, env_id in ({} if a.ros_only else TASKS).items():
        rates = {f"{n}_envs": round(env_rate(env_id, n, max(50, steps // n))) for n in (1, 2, 8)}
        rates["2_envs_subproc"] = round(env_rate(env_id, 2, max(50, steps // 2), subproc=True))
        res["env_steps_per_s"][task] = rates
        res["train_fps"][task] = round(train_fps(task, 4096 if a.quick else 16384))
        bundle = os.path.join(REPO, "policies", task)
        if os.path.isfile(os.path.join(bundle, "io.yaml")):
            timings = _inference(bundle, 500 if a.quick else 5000)
            res["inference_us"][task] = {k: round(v, 1) for k, v in timings.items()}
    json.dump(res, sys.stdout, indent=1)
    print(file=sys.stdout)
    if a.record:
        record(a.record, res, command=command_line())
    lines = ["| task | env steps/s 1 env | 2 envs | 8 envs | 2 envs subproc | PPO train fps | onnxruntime us "
             "| torch us | SB3 predict us |",
             "|---|---|---|---|---|---|---|---|---|"]
    for task in ({} if a.ros_only else TASKS):
        e, inf = res["env_steps_per_s"][task], res["inference_us"].get(task, {})
        lines.append(f"| {task} | {e['1_envs']} | {e['2_envs']} | {e['8_envs']} | {e['2_envs_subproc']} | "
                     f"{res['train_fps'][task]} | {inf.get('onnxruntime', '-')} | {inf.get('torch', '-')} | "
                     f"{inf.get('sb3_predict', '-')} |")
    if res["ros_lockstep"]:
        lines += ["", "| task (1 env) | in-process env steps/s | over ROS, verify=before | over ROS, verify=after | "
                  "over ROS, transport=request | PPO fps in process | PPO fps over ROS (before / request) |",
                  "|---|---|---|---|---|---|---|"]
        for task, r in res["ros_lockstep"].items():
            lines.append(f"| {task} | {r['in_process_env_steps_per_s']} | {r['ros_env_steps_per_s_verify_before']} | "
                         f"{r['ros_env_steps_per_s_verify_after']} "
                         f"(late commands: {r['late_commands_verify_after']}) | "
                         f"{r['ros_env_steps_per_s_request']} | {r.get('in_process_ppo_train_fps', '-')} | "
                         f"{r.get('ros_ppo_train_fps', '-')} / {r.get('ros_ppo_train_fps_request', '-')} |")
    if res["ros_batched"]:
        lines += ["", "| task, 8 envs | in-process DummyVecEnv steps/s | batch bridge over ROS steps/s | ratio | "
                  "PPO fps in process | PPO fps over ROS | ratio |", "|---|---|---|---|---|---|---|"]
        for task, r in res["ros_batched"].items():
            lines.append(f"| {task} | {r['in_process_env_steps_per_s']} | {r['ros_env_steps_per_s']} | "
                         f"{r['env_ratio']} | {r.get('in_process_ppo_train_fps', '-')} | "
                         f"{r.get('ros_ppo_train_fps', '-')} | {r.get('ppo_ratio', '-')} |")
    print("\n".join(lines), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
