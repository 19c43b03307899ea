"""RLlib PPO training throughput on Ray with 1 and 2 env runners (the cart-pole task's config),
and the parts of one training iteration (sampling, learner update, weight sync) that the
projection to N machines in docs/guides/scale-out-on-ray.md is built from.

    python bench/bench_ray.py [--quick] [--runners 1 2] [--iters 8]

Prints JSON on stdout and a markdown table on stderr. Each configuration builds the algorithm on a
private local Ray instance, runs one warm-up iteration, then ``--iters`` timed iterations.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time


def measure(cfg, runners: int, iters: int) -> dict:
    from rlstack_learning.rllib_train import algo_config

    algo = algo_config(cfg, runners).build_algo()
    try:
        algo.train()                                    # warm-up: actors started, first sync
        steps0 = None
        t0 = time.perf_counter()   # the timed iterations start here
        sample_s = learn_s = sync_s = 0.0
        for _ in range(iters):
            r = algo.train()
            if steps0 is None:   # lifetime steps before the first timed iteration
                steps0 = r["num_env_steps_sampled_lifetime"] - r["env_runners"]["num_env_steps_sampled"]
            timers = r.get("timers", {})
            sample_s += float(timers.get("env_runner_sampling_timer", 0.0))
            learn_s += float(timers.get("learner_update_timer", 0.0))
            sync_s += float(timers.get("synch_weights", 0.0))
        wall = time.perf_counter() - t0
        steps = r["num_env_steps_sampled_lifetime"] - steps0
    finally:
        algo.stop()
    batch = steps / iters
    return {"env_runners": runners, "envs_per_runner": max(1, cfg["num_envs"] // runners), "iterations": iters,
            "env_steps": int(steps), "wall_s": round(wall, 2), "steps_per_s": round(steps / wall, 1),
            "batch_per_iteration": round(batch), "sample_s_per_iter": round(sample_s / iters, 3),
            "learn_s_per_iter": round(learn_s / iters, 3), "sync_s_per_iter": round(sync_s / iters, 3)}


def project(one: dict, machines, cpus_per_machine: int) -> list:
    """Synchronous PPO: an iteration is sampling (split over the runners) + the learner's update
    (one process, unchanged by the runners) + weight sync. From the 1-runner measurement: one
    runner samples ``batch / sample_s`` steps/s; with R runners sampling takes ``batch / (R * that)``."""
    rate = one["batch_per_iteration"] / one["sample_s_per_iter"]
    rows = []
    for n in machines:
        runners = n * cpus_per_machine
        for batch in (one["batch_per_iteration"], one["batch_per_iteration"] * runners):
            it = (batch / (runners * rate) + one["learn_s_per_iter"] * batch / one["batch_per_iteration"]
                  + one["sync_s_per_iter"])
            rows.append({"machines": n, "env_runners": runners, "batch": int(batch), "steps_per_s": round(batch / it)})
    return rows


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    from rlstack_common.results_record import add_record_argument, command_line, record
    add_record_argument(p)
    p.add_argument("--quick", action="store_true", help="3 timed iterations")
    p.add_argument("--runners", type=int, nargs="+", default=[1, 2])
    p.add_argument("--iters", type=int, default=8)
    p.add_argument("--task", default="cartpole")
    a = p.parse_args()
    import torch

    from rlstack_common.ray_cluster import init_ray, shutdown
    from rlstack_learning.config import load

    torch.set_num_threads(1)
    iters = 3 if a.quick else a.iters
    cfg = load(a.task)
    cluster = init_ray(num_cpus=max(a.runners))
    try:
        rows = [measure(cfg, r, iters) for r in a.runners]
    finally:
        shutdown()
    one = next((r for r in rows if r["env_runners"] == 1), rows[0])
    out = {"task": a.task, "algorithm": "ppo", "cluster": cluster, "machine": {"cpu_count": os.cpu_count(),
           "cpu": platform.processor()}, "results": rows,
           "projection_16_cpu_machines": project(one, (1, 2, 4, 8), 16)}
    print(json.dumps(out, indent=1))
    if a.record:
        record(a.record, out, command=command_line())
    print("\n| env runners | envs each | env steps/s | sampling s/iter | learner s/iter | sync s/iter |",
          file=sys.stderr)
    print("|---|---|---|---|---|---|", file=sys.stderr)
    for r in rows:
        print(f"| {r['env_runners']} | {r['envs_per_runner']} | {r['steps_per_s']:.0f} | {r['sample_s_per_iter']:.3f} "
              f"| {r['learn_s_per_iter']:.3f} | {r['sync_s_per_iter']:.3f} |", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
