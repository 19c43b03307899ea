"""``train_node``: train a task through a lockstep sim_bridge over ROS 2, publish progress, write a bundle.

A thin rclpy adapter around :func:`rlstack_learning.train.train`: the environments are
:class:`~rlstack_learning.ros.lockstep_env.LockstepEnv` (one per bridge: ``bridges``, on the
deployment topics or, ``transport: request``, with command and observation in the step call),
or one :class:`~rlstack_learning.ros.batch_env.BatchLockstepVecEnv` over a ``batch_bridge``
(``batch_bridge``: all envs in one bridge process, one round trip per batch step),
progress goes out as JSON on ``~/progress`` (``std_msgs/String``), and at the end the best
model is exported to a bundle (``bundle_dir``; its evaluation runs in-process).

    ros2 run rlstack_learning train_node --ros-args --params-file launch/params/train_node.yaml \\
        -p task:=cartpole -p total_timesteps:=20000 -p bundle_dir:=out/policies/cartpole_ros

Progress message (one JSON object per ``progress_period_s`` of wall time, plus phase changes)::

    {"phase": "training", "timesteps": 4096, "total_timesteps": 20000, "fps": 610.2,
     "episodes": 37, "mean_return_10": 88.1, "success_rate_10": 0.0, "wall_time_s": 6.7,
     "run_dir": "...", "late_commands": 0, "sync_calls": 0}

``phase``: ``started`` -> ``training`` ... -> ``exporting`` -> ``done`` (with ``bundle`` and
``evaluation``) or ``failed`` (with ``error``). The node exits when the job is done
(exit code 0; 1 on failure; 2 on bad parameters).

SIGINT / SIGTERM (Ctrl-C, ``ros2 launch`` shutting down) stop training at the next step (or
the next wait for the bridge, which may already be gone): the run folder gets a checkpoint
of the model as it is (``checkpoints/``; start again with the same ``run`` to resume),
``interrupted`` is published, nothing is exported, and the node exits 0.
"""

from __future__ import annotations

import collections
import json
import os
import sys
import time
from typing import Any, Dict, List, Optional

import rclpy
from rclpy.node import Node
from std_msgs.msg import String

from rlstack_common.node_main import StopFlag
from rlstack_common.param_table import declare_all

from ..checkpoints import TrainingInterrupted, latest_checkpoint
from ..config import ConfigError, load
from ..parameters import TRAIN_NODE
from .lockstep_env import LockstepEnv, LockstepInterrupted, make_executor


class TrainNode(Node):
    def __init__(self) -> None:
        super().__init__("train_node")
        self.stop: Optional[StopFlag] = None
        v = declare_all(self, TRAIN_NODE)
        self.task, self.algo, self.total_timesteps, self.seed = v.task, v.algo, v.total_timesteps, v.seed
        self.eval_freq, self.bridges, self.batch_bridge = v.eval_freq, v.bridges, v.batch_bridge
        self.transport, self.verify, self.timeout_s = v.transport, v.verify, v.timeout_s
        self.out_dir, self.run_name, self.bundle_dir = v.out_dir, v.run, v.bundle_dir
        self.export_episodes, self.progress_period_s, self.show_progress = (v.export_episodes, v.progress_period_s,
                                                                            v.progress_bar)
        if self.verify not in ("before", "after"):
            raise ConfigError(f"verify must be 'before' or 'after', got {self.verify!r}")
        if self.transport not in ("topics", "request", "standard"):
            raise ConfigError(f"transport must be 'topics', 'request' or 'standard', got {self.transport!r}")
        qos = rclpy.qos.QoSProfile(depth=100, reliability=rclpy.qos.ReliabilityPolicy.RELIABLE,
                                   durability=rclpy.qos.DurabilityPolicy.TRANSIENT_LOCAL)
        self.progress_pub = self.create_publisher(String, "~/progress", qos)
        self.envs: List[Any] = []   # LockstepEnv, or one BatchLockstepVecEnv

    def publish(self, **fields: Any) -> None:
        self.progress_pub.publish(String(data=json.dumps(fields)))

    # ------------------------------------------------------------------ the job
    def run(self, stop: Optional[StopFlag] = None) -> int:
        self.stop = stop
        executor = make_executor(self.context)
        executor.add_node(self)
        batch = None
        if self.batch_bridge:
            from .batch_env import BatchLockstepVecEnv

            env_id = load(self.task, {"randomize": False})["env_id"]
            batch = BatchLockstepVecEnv(env_id, self, executor=executor, bridge=self.batch_bridge,
                                        timeout_s=self.timeout_s, should_stop=lambda: self.stopped)
            self.envs.append(batch)
        overrides = {"algo": self.algo or None, "total_timesteps": self.total_timesteps or None,
                     "seed": self.seed if self.seed >= 0 else None, "eval_freq": self.eval_freq or None,
                     "num_envs": batch.num_envs if batch else len(self.bridges), "randomize": False,
                     "vec_env": "dummy"}
        cfg = load(self.task, overrides)
        run = self.run_name or f"{cfg.algo}_ros_s{cfg['seed']}_{time.strftime('%Y%m%d-%H%M%S')}"
        run_dir = os.path.join(self.out_dir, cfg["task"], run)
        resume = os.path.exists(os.path.join(run_dir, "config.yaml"))
        if resume and latest_checkpoint(run_dir)[0] is None:
            raise ConfigError(f"run folder {run_dir} exists and holds no checkpoint to resume; choose another 'run'")
        bridges = [self.batch_bridge] if batch else list(self.bridges)
        self.publish(phase="started", task=cfg["task"], algo=cfg.algo, total_timesteps=cfg["total_timesteps"],
                     bridges=bridges, num_envs=cfg["num_envs"], run_dir=run_dir)
        self.get_logger().info(f"training {cfg['task']} with {cfg.algo.upper()} over ROS in lockstep on "
                               f"{', '.join(bridges)} ({cfg['num_envs']} envs"
                               f"{', batched' if batch else ', transport ' + self.transport}) -> {run_dir}")

        def venv_factory(c, seed):
            from stable_baselines3.common.monitor import Monitor
            from stable_baselines3.common.vec_env import DummyVecEnv, VecMonitor

            if batch is not None:
                venv = VecMonitor(batch)
                venv.seed(seed)
                return venv

            def make(bridge):
                def thunk():
                    env = LockstepEnv(c["env_id"], self, executor=executor, bridge=bridge, verify=self.verify,
                                      timeout_s=self.timeout_s, should_stop=lambda: self.stopped,
                                      transport=self.transport)
                    self.envs.append(env)
                    return Monitor(env)
                return thunk
            venv = DummyVecEnv([make(b) for b in self.bridges])
            venv.seed(seed)
            return venv

        from ..train import train

        summary = train(cfg, run_dir, resume=resume, progress=self.show_progress, venv_factory=venv_factory,
                        extra_callbacks=[self._progress_callback(cfg, run_dir)])
        late = sum(getattr(e, "late_commands", 0) for e in self.envs)
        syncs = sum(getattr(e, "sync_calls", 0) for e in self.envs)
        if summary.get("interrupted"):
            for env in self.envs:
                env.close()
            self.publish(phase="interrupted", timesteps=summary["timesteps"], run_dir=run_dir)
            self.get_logger().info(f"interrupted at {summary['timesteps']} steps; resumable from {run_dir}")
            return 0
        self.publish(phase="trained", **{k: summary[k] for k in ("timesteps", "wall_time_s", "fps_this_session")},
                     late_commands=late, sync_calls=syncs, run_dir=run_dir)
        result: Dict[str, Any] = {"phase": "done", "run_dir": run_dir, "timesteps": summary["timesteps"],
                                  "wall_time_s": summary["wall_time_s"], "fps": summary["fps_this_session"],
                                  "late_commands": late, "sync_calls": syncs}
        if self.bundle_dir:
            self.publish(phase="exporting", bundle=self.bundle_dir)
            from ..export import export_run

            ev = export_run(run_dir, self.bundle_dir, episodes=self.export_episodes, progress=False,
                            bundle_name=os.path.basename(os.path.normpath(self.bundle_dir)))
            result.update(bundle=self.bundle_dir, evaluation={
                "nominal_success_rate": ev["nominal"]["success_rate"],
                "randomized_success_rate": ev["randomized"]["success_rate"], "episodes": ev["episodes"]})
        for env in self.envs:
            env.close()
        self.publish(**result)
        # let late joiners (transient local) and the executor deliver the last messages
        end = time.monotonic() + 0.5
        while time.monotonic() < end:
            executor.spin_once(timeout_sec=0.05)
        self.get_logger().info(f"done: {json.dumps(result)}")
        return 0

    @property
    def stopped(self) -> bool:
        return self.stop is not None and self.stop.is_set()

    def _progress_callback(self, cfg, run_dir: str):
        from stable_baselines3.common.callbacks import BaseCallback

        node = self

        class Progress(BaseCallback):
            def _on_training_start(self) -> None:
                self.t0 = time.perf_counter()
                self.n0 = self.num_timesteps
                self.last = 0.0
                self.returns: collections.deque = collections.deque(maxlen=10)
                self.successes: collections.deque = collections.deque(maxlen=10)
                self.episodes = 0

            def _on_step(self) -> bool:
                for info, done in zip(self.locals.get("infos", []), self.locals.get("dones", [])):
                    if done and "episode" in info:
                        self.episodes += 1
                        self.returns.append(float(info["episode"]["r"]))
                        self.successes.append(float(bool(info.get("is_success", False))))
                now = time.perf_counter()
                if now - self.last >= node.progress_period_s:
                    self.last = now
                    self.publish(now)
                if node.stopped:  # train() checkpoints the model and returns
                    raise TrainingInterrupted("SIGINT/SIGTERM")
                return True

            def publish(self, now: float) -> None:
                el = max(now - self.t0, 1e-9)
                node.publish(
                    phase="training", timesteps=int(self.num_timesteps), total_timesteps=cfg["total_timesteps"],
                    fps=round((self.num_timesteps - self.n0) / el, 1), episodes=self.episodes,
                    mean_return_10=round(sum(self.returns) / len(self.returns), 3) if self.returns else None,
                    success_rate_10=round(sum(self.successes) / len(self.successes), 3) if self.successes else None,
                    wall_time_s=round(el, 2), run_dir=run_dir,
                    late_commands=sum(getattr(e, "late_commands", 0) for e in node.envs),
                    sync_calls=sum(getattr(e, "sync_calls", 0) for e in node.envs))

            def _on_training_end(self) -> None:
                self.publish(time.perf_counter())

        return Progress()


def main(args: Optional[List[str]] = None) -> int:
    from rclpy.signals import SignalHandlerOptions

    with StopFlag() as stop:
        # Signals only set the flag: training stops between steps (see the module docstring).
        rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
        return _run(args, stop)


def _run(args: Optional[List[str]], stop: StopFlag) -> int:
    node = None
    try:
        node = TrainNode()
        return node.run(stop)
    except LockstepInterrupted as exc:  # signalled while waiting for a bridge: not a failure
        node.get_logger().info(f"interrupted ({exc}); the run folder keeps its last checkpoint")
        node.publish(phase="interrupted", error=str(exc))
        return 0
    except ConfigError as exc:
        print(f"train_node: error: {exc}", file=sys.stderr)
        return 2
    except rclpy.exceptions.ParameterException as exc:
        print(f"train_node: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # noqa: BLE001 - report on the topic, then fail
        if node is not None:
            try:
                node.publish(phase="failed", error=f"{type(exc).__name__}: {exc}")
            except Exception:  # noqa: BLE001
                pass
        raise
    finally:
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()


if __name__ == "__main__":
    sys.exit(main())
