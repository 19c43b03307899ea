"""The robot-mode lift against action delay and cube yaw, in process: ``python tools/probes/lift_delay_sweep.py``.

Why: in the 20-layout robot-mode evaluations every fetch that failed to lift a cube on a table
(seeds 4, 8 and 18, twice) had the cube turned 40-45 deg to the robot's approach, and over ROS the
arm runs a step or more behind the command. This plays ``policies/mobile_lift_perceived`` (or the
scripted expert it imitates, ``--expert``) in ``RlStack/MobileLiftPerceived-v0`` with a fixed action
delay and the target cube turned to a fixed yaw in ``base_link``, and prints the success per cell.

Measured without the wrist turn (12 episodes per cell, tables, the gripper's yaw fixed): the policy 12/12 at
delay 2 with the cube square to the gripper, 8/12 at delay 2 and 42 deg, 0/12 at delay 3 and 42 deg,
1/12 at delay 3 and 0 deg; the expert alike (it was tuned for 1-2 steps of lag).

With the wrist turn, each episode starts with the wrist turned square to the estimate (``/arm/ee_yaw``;
the env's ``align_wrist``), as the fetch mission does: the same policy scores 12/12 in every cell at
delays 1 and 2 for cubes at 0, 30 and 45 deg, on tables and on the floor; at delay 3 it still fails
(0-3/12). An expert with gain 0.4 instead of 0.6 holds up at delay 3 (10-12/12) but its behaviour
clone scored 83 % and was not shipped. docs/reference/mission.md ("Robot mode") has the tables.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from rlstack_learning.envs.base import EVAL_SEED_BASE
from rlstack_learning.envs.mobile_lift_perceived import MobileLiftPerceivedEnv, perceived_expert
from sim_bridges.contract import Pose
from sim_bridges.geometry import quat_from_rpy
from sim_bridges.scenes.mobile_table import TARGET

ROOT = Path(__file__).resolve().parents[2]


def run_cell(delay: int, yaw_deg: float, episodes: int, floor_fraction: float, expert: bool) -> int:
    env = MobileLiftPerceivedEnv(floor_fraction=floor_fraction,
                                 randomize={"action_delay_steps": [delay, delay]})
    if expert:
        act = perceived_expert(env)
    else:
        from rlstack_bundle import bundle

        act = bundle.load(str(ROOT / "policies" / "mobile_lift_perceived")).act
    ok = 0
    try:
        for i in range(episodes):
            obs, _ = env.reset(seed=EVAL_SEED_BASE + 900 + i)
            # turn the target where it lies, then draw the held estimate again for the turned cube
            st = env.sim.ground_truth()[TARGET]
            env.sim.set_object_pose(TARGET, Pose(list(st.pose.position),
                                                 list(quat_from_rpy(0.0, 0.0, math.radians(yaw_deg)))))
            env._task_reset(env._rng)
            obs = env._observe(env._raw_obs())
            for _ in range(env.max_episode_steps):
                obs, _, terminated, truncated, info = env.step(act(obs))
                if terminated or truncated:
                    ok += bool(info.get("is_success", False))
                    break
    finally:
        env.close()
    return ok


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--delays", type=int, nargs="+", default=[1, 2, 3])
    p.add_argument("--yaws", type=float, nargs="+", default=[0.0, 42.0], help="cube yaw in base_link, deg")
    p.add_argument("--episodes", type=int, default=12)
    p.add_argument("--floor-fraction", type=float, default=0.0, help="0: tables only, 1: floor only")
    p.add_argument("--expert", action="store_true", help="the scripted expert instead of the shipped policy")
    a = p.parse_args(argv)
    print("| delay (steps) | " + " | ".join(f"yaw {y:g} deg" for y in a.yaws) + " |")
    print("|---|" + "---|" * len(a.yaws))
    for d in a.delays:
        cells = [f"{run_cell(d, y, a.episodes, a.floor_fraction, a.expert)}/{a.episodes}" for y in a.yaws]
        print(f"| {d} | " + " | ".join(cells) + " |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
