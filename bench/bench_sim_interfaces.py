#!/usr/bin/env python3
"""Step rates of the lockstep bridge through the ROS 2 standard (simulation_interfaces) and through ours.

For one scene (default cart-pole), one lockstep ``sim_bridge`` process on a private ROS domain:

* ``service``: control steps/s of bare step calls, one step per call, from a
  ``rlstack_common.fast_lane.DirectClient``: the standard's ``~/step_simulation``
  (``StepSimulation``) and our extension's ``~/step`` (``SimStep``, nothing in the request).
* ``env``: env steps/s of ``LockstepEnv`` (random actions, episodes reset as they end) with each
  transport: ``request`` (our extension: command in the step request, observation in the response;
  the fast path), ``topics`` (our default: topics plus ``~/step``, with the ``steps=0`` command check)
  and ``standard`` (``ResetSimulation``/``StepSimulation`` and the topics only: what works against
  any simulator that speaks the standard).

Output: JSON on stdout, a markdown table on stderr. ``--record docs/results/sim_interfaces_speed.json``
also writes the results file (with the command, commit, date and hardware; rlstack_common.results_record).

Usage::

    source env.sh && python bench/bench_sim_interfaces.py [--steps 2000] \\
        [--record docs/results/sim_interfaces_speed.json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import rclpy

from rlstack_common.fast_lane import DirectClient
from rlstack_testing.domain import lease_domain_id
from rlstack_testing.processes import ProcessGroup

REPO = Path(__file__).resolve().parents[1]
PARAMS = REPO / "launch" / "params" / "sim_bridge.yaml"
ENV_IDS = {"cartpole": "RlStack/CartPole-v0", "ball_plate": "RlStack/BallPlate-v0"}
TRANSPORTS = ("request", "topics", "standard")


def service_rates(node, calls: int) -> dict:
    from simulation_interfaces.srv import StepSimulation

    from rlstack_interfaces.srv import SimStep

    out = {}
    for key, srv, name, req, ok in (
            ("standard_step_simulation", StepSimulation, "/sim_bridge/step_simulation", StepSimulation.Request(steps=1),
             lambda r: r.result.result == 1),
            ("extension_step", SimStep, "/sim_bridge/step", SimStep.Request(steps=1), lambda r: r.success)):
        cli = DirectClient(node, srv, name)
        deadline = time.monotonic() + 60
        while not cli.service_is_ready():
            if time.monotonic() > deadline:
                raise TimeoutError(f"no {name}")
            time.sleep(0.05)
        for _ in range(max(20, calls // 10)):   # warm-up
            cli.call(req, 5.0)
        t0 = time.perf_counter()
        for _ in range(calls):
            r = cli.call(req, 5.0)
            if not ok(r):
                raise RuntimeError(f"{name} refused: {r}")
        out[key] = round(calls / (time.perf_counter() - t0), 1)
        cli.destroy()
    return out


def env_rate(node, env_id: str, transport: str, steps: int) -> float:
    from rlstack_learning.ros.lockstep_env import LockstepEnv

    env = LockstepEnv(env_id, node, transport=transport, timeout_s=20.0, discovery_timeout_s=60.0)
    rng = np.random.default_rng(0)
    try:
        env.reset(seed=0)
        for _ in range(50):   # warm-up
            if any(env.step(env.action_space.sample())[2:4]):
                env.reset(seed=int(rng.integers(1 << 30)))
        t0, done = time.perf_counter(), 0
        while done < steps:
            _, _, terminated, truncated, _ = env.step(env.action_space.sample())
            done += 1
            if terminated or truncated:
                env.reset(seed=int(rng.integers(1 << 30)))
        return round(done / (time.perf_counter() - t0), 1)
    finally:
        env.close()


def run(scene: str, steps: int, calls: int) -> dict:
    import rlstack_learning  # noqa: F401  (registers the envs)

    lease = lease_domain_id()
    with ProcessGroup(lease.domain_id, Path(tempfile.mkdtemp(prefix="bench_sim_interfaces_"))) as group:
        group.start_node("rlstack_sim", "sim_bridge", params_file=PARAMS,
                         params={"scene": scene, "mode": "lockstep", "camera_enabled": False, "control_rate_hz": 60.0,
                                 "publish_rate_hz": 60.0, "ground_truth_rate_hz": 60.0})
        ctx = rclpy.Context()
        rclpy.init(context=ctx, domain_id=lease.domain_id)
        node = rclpy.create_node("bench_sim_interfaces", context=ctx)
        try:
            result = {"scene": scene, "service_steps_per_s": service_rates(node, calls),
                      "env_steps_per_s": {t: env_rate(node, ENV_IDS[scene], t, steps) for t in TRANSPORTS}}
        finally:
            node.destroy_node()
            rclpy.shutdown(context=ctx)
            group.stop_all()
            lease.release()
    return result


def table(result: dict) -> str:
    s, e = result["service_steps_per_s"], result["env_steps_per_s"]
    rows = [("service", "StepSimulation (standard), 1 step per call", s["standard_step_simulation"]),
            ("service", "SimStep ~/step (ours), 1 step per call", s["extension_step"]),
            ("env", "LockstepEnv transport=request (ours, fast path)", e["request"]),
            ("env", "LockstepEnv transport=topics (ours, default)", e["topics"]),
            ("env", "LockstepEnv transport=standard (standard + topics)", e["standard"])]
    lines = [f"{result['scene']}: steps/s", "", "| level | path | steps/s |", "|---|---|---:|"]
    lines += [f"| {a} | {b} | {c:,.0f} |" for a, b, c in rows]
    return "\n".join(lines)


def main(argv=None) -> int:
    from rlstack_common.results_record import add_record_argument, command_line, record

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scene", default="cartpole", choices=sorted(ENV_IDS))
    ap.add_argument("--steps", type=int, default=2000, help="env steps per transport")
    ap.add_argument("--calls", type=int, default=2000, help="service calls per service")
    add_record_argument(ap)
    args = ap.parse_args(argv)
    result = run(args.scene, args.steps, args.calls)
    result["load_average_1min"] = round(os.getloadavg()[0], 1)   # the machine is shared: how busy it was
    print(json.dumps(result, indent=1))
    print(table(result), file=sys.stderr)
    if args.record:
        record(args.record, result, command=command_line(argv=argv))
    return 0


if __name__ == "__main__":
    sys.exit(main())
