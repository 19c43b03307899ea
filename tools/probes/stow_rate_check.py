#!/usr/bin/env python3
"""Lift, then stow the arm to the carry pose as the fetch mission does, with the bridge's control
rate above the commands' rate, in process: ``python tools/probes/stow_rate_check.py --backend mujoco``.

Why: in the fetch graph on MuJoCo the cube left the closed fingers during the stow. The
graph's bridge runs at 60 Hz (``launch/params/sim_bridge.yaml``) while the lift policy and the
mission command the arm at 20 Hz, and a backend moves the arm through each end-effector step
within one *control* period: 1.5 cm in 16.7 ms, then still for 33 ms. In-process training and the
earlier in-process checks ran the arm at 20 Hz (each step spread over 50 ms). This plays
``policies/mobile_lift`` (ground-truth target, as ``--ground-truth-grasp``) for the lift with the
backend at ``--bridge-hz``, a command every ``bridge_hz / 20`` control periods, then the
mission's stow (a third of the error per command, at most 1.5 cm; carry point (0.40, 0, 0.60) in
base_link) and reports per episode whether the cube is still held.

``--carry`` then drives the base as navigation does on the way to the drop-off (the regulated pure
pursuit's limits in ``launch/params/nav_controller.yaml``: a half turn in place at 1.2 rad/s, 1 m
at 0.5 m/s, a quarter turn while driving at 1.5 rad/s, an emergency stop from 0.5 m/s) and
reports which manoeuvre, if any, the cube fell out in. Why: in the fetch graph on MuJoCo the
cube fell out of the closed hand on the way to the drop-off (seeds 2 and 11; the mission, not
watching the hand, called it SUCCEEDED).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
CARRY = np.array([0.40, 0.0, 0.60])


#: (name, [(linear m/s, angular rad/s, seconds)]): commands at 20 Hz, ramped by the controller's
#: acceleration limits (0.5 m/s^2, 2.5 rad/s^2; stopping 0.8 m/s^2) except the emergency stop
MANOEUVRES = (
    ("half turn in place", [(0.0, 1.2, 2.6), (0.0, 0.0, 1.0)]),
    ("1 m straight", [(0.5, 0.0, 2.5), (0.0, 0.0, 1.5)]),
    ("quarter turn while driving", [(0.5, 0.0, 1.5), (0.5, 1.5, 1.05), (0.5, 0.0, 1.0), (0.0, 0.0, 1.5)]),
    ("emergency stop from 0.5 m/s", [(0.5, 0.0, 2.0), (None, None, 1.0)]),
)


def drive(env, per_command: int, plan) -> bool:
    """Drive the base through ``plan`` (see MANOEUVRES); True while the cube stays in the hand."""
    v = w = 0.0
    dt = 1.0 / env.control_rate_hz
    for v_goal, w_goal, seconds in plan:
        for _ in range(int(round(seconds / dt))):
            if v_goal is None:            # the bridge's watchdog: stop at once
                v = w = 0.0
            else:
                dv_max = (0.5 if abs(v_goal) > abs(v) else 0.8) * dt
                v += max(-dv_max, min(dv_max, v_goal - v))
                w += max(-2.5 * dt, min(2.5 * dt, w_goal - w))
            env.sim.set_base_velocity(v, w)
            env.sim.set_gripper(False)
            env.sim.step(per_command)
            if float(env._raw_obs()[3]) <= 0.02:
                return False
    return True


def run(backend: str, bridge_hz: float, episodes: int, seed0: int, step_period: float = 0.0,
        carry: bool = False) -> list:
    from rlstack_bundle import bundle
    from rlstack_learning.envs.base import EVAL_SEED_BASE
    from rlstack_learning.envs.mobile_lift import MobileLiftEnv

    act = bundle.load(str(ROOT / "policies" / "mobile_lift")).act
    env = MobileLiftEnv(backend=backend)
    per_command = int(round(bridge_hz / env.control_rate_hz))
    results = []
    try:
        for i in range(episodes):
            obs, _ = env.reset(seed=EVAL_SEED_BASE + seed0 + i)
            env.sim.set_control_rate(bridge_hz)
            if step_period > 0:   # the bridge's ee_step_period_s
                env.sim.set_end_effector_step_period(step_period)
            lifted = False
            for _ in range(env.max_episode_steps):
                env._apply_command(env.action_to_command(act(obs)))
                env.sim.step(per_command)
                env.steps += 1
                raw = env._raw_obs()
                _, done, info = env._reward_terminated(raw, None)
                obs = env._observe(raw)
                if done:
                    lifted = bool(info.get("is_success"))
                    break
            if not lifted:
                results.append(("not lifted", None))
                env.sim.set_control_rate(env.control_rate_hz)
                continue
            # the mission's stow: /arm/ee_delta at 20 Hz towards the carry point, gripper closed
            env.sim.set_gripper(False)
            held_min = None
            for _ in range(int(6.0 * env.control_rate_hz)):
                ee = np.asarray(obs[0:3], np.float64)          # grasp point in base_link
                err = CARRY - ee
                if np.linalg.norm(err) < 0.015:
                    break
                step = np.clip(0.33 * err, -0.015, 0.015)
                env.sim.set_end_effector_delta(*step)
                env.sim.step(per_command)
                raw = env._raw_obs()
                obs = env._observe(raw)
                width = float(raw[3])
                held_min = width if held_min is None else min(held_min, width)
            width = float(env._raw_obs()[3])
            if width > 0.02 and carry:
                for name, plan in MANOEUVRES:
                    if not drive(env, per_command, plan):
                        results.append((f"fell out: {name}", round(float(env._raw_obs()[3]) * 100, 2)))
                        break
                else:
                    results.append(("held through every manoeuvre", round(float(env._raw_obs()[3]) * 100, 2)))
                env.sim.set_base_velocity(0.0, 0.0)
                env.sim.set_control_rate(env.control_rate_hz)
                continue
            results.append(("held" if width > 0.02 else "dropped", round(width * 100, 2)))
            env.sim.set_control_rate(env.control_rate_hz)
    finally:
        env.close()
    return results


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", default="mujoco", choices=("pybullet", "mujoco"))
    ap.add_argument("--bridge-hz", type=float, nargs="+", default=[20.0, 60.0])
    ap.add_argument("--episodes", type=int, default=6)
    ap.add_argument("--seed0", type=int, default=700)
    ap.add_argument("--step-period", type=float, default=0.0,
                    help="spread each end-effector step over this long, s (the bridge's ee_step_period_s; 0: one "
                         "control period)")
    ap.add_argument("--carry", action="store_true", help="after the stow, drive the base as navigation does "
                    "(MANOEUVRES) and report which manoeuvre the cube fell out in")
    a = ap.parse_args(argv)
    for hz in a.bridge_hz:
        res = run(a.backend, hz, a.episodes, a.seed0, a.step_period, a.carry)
        held = sum(r[0].startswith("held") for r in res)
        lifted = sum(r[0] != "not lifted" for r in res)
        when = "through the drive" if a.carry else "after the stow"
        print(f"{a.backend} bridge {hz:g} Hz, ee step period {a.step_period or 1 / hz:.4f} s: held {when} "
              f"{held} of {lifted} lifted ({a.episodes} episodes): {res}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
