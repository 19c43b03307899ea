#!/usr/bin/env python3
"""Record one fetch's arm commands and gripper/object states, and print what happened around each
lost grasp (issue 16: on MuJoCo the cube left the closed fingers during the stow).

    python tools/lift_trace.py --backend mujoco --seed 0 [--ground-truth-grasp]

Starts the fetch graph (``fetch.launch.yaml backend:=...``), runs one seeded fetch and records
``/arm/ee_delta``, ``/arm/ee_yaw``, ``/arm/gripper``, ``/joint_states``, ``/sim_ground_truth/poses``
and ``/clock`` into ``out/lift_trace/<backend>_seed<N>.mcap`` (rosbag2's format: ``ros2 bag info``
opens it). Then, from the recording: every moment the fingers closed past ``--closed-width`` while
the target stood above its start height (the object left the hand), with the arm commands and
states of the ``--window`` s of sim time before it, one line per message. Evaluator side: it
reads simulator truth.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOPICS = ["/clock", "/arm/ee_delta", "/arm/ee_yaw", "/arm/gripper", "/joint_states", "/sim_ground_truth/poses",
          "/sim_ground_truth/markers", "/grasp_target"]
FINGERS = ("panda_finger_joint1", "panda_finger_joint2")


def record(args) -> tuple:
    import rclpy
    from rclpy.executors import MultiThreadedExecutor

    from rlstack_mission.graph import FetchGraph, use_private_domain
    from rlstack_mission.harness import FetchHarness
    from rlstack_mission.recording import McapRecorder

    lease = use_private_domain()   # noqa: F841 (held until exit)
    out = ROOT / "out" / "lift_trace"
    out.mkdir(parents=True, exist_ok=True)
    stem = f"{args.backend}_seed{args.seed}{'_gt' if args.ground_truth_grasp else ''}"
    from rclpy.parameter import Parameter

    rclpy.init(args=[])
    # sim time: the recording's log times are then the bridge's clock, comparable with the stamps
    node = rclpy.create_node("lift_trace", parameter_overrides=[Parameter("use_sim_time", value=True)])
    executor = MultiThreadedExecutor(num_threads=3)
    executor.add_node(node)
    threading.Thread(target=executor.spin, daemon=True).start()
    graph_args = {"backend": args.backend}
    if args.backend == "mujoco":
        graph_args["arm_step_period_s"] = str(args.arm_step_period)   # as make eval-fetch BACKEND=mujoco
    if args.ground_truth_grasp:
        graph_args["robot_mode"] = "false"
    try:
        with FetchGraph(ROOT, out / f"{stem}_graph.log", graph_args) as graph:
            print(f"graph ready in {graph.wait_ready(node, timeout_s=180):.0f} s", flush=True)
            harness = FetchHarness(node)
            layout = harness.layout(args.seed, str(ROOT / "maps" / "home.yaml"))
            harness.apply(layout)
            recorder = McapRecorder(node, out / f"{stem}.mcap", TOPICS).start()
            result = harness.fetch(layout, timeout_s=args.timeout,
                                   on_feedback=lambda ph, d: print(f"  [{ph}] {d}", flush=True))
            time.sleep(1.0)
            path = recorder.stop()
    finally:
        executor.shutdown()
        node.destroy_node()
        rclpy.try_shutdown()
    print(json.dumps({k: result[k] for k in ("code_name", "reason", "grasp_attempts")}), flush=True)
    return path, layout.target


def analyse(path: Path, target: str, closed_width: float, window: float) -> None:
    from mcap.reader import make_reader
    from mcap_ros2.decoder import DecoderFactory

    rows = []        # (sim time s, topic, text)
    width_at = []    # (t, finger width)
    z_at = []        # (t, target z)
    z0 = None
    with open(path, "rb") as f:
        for _schema, channel, message, msg in make_reader(f, decoder_factories=[DecoderFactory()]).iter_decoded_messages():
            t = message.log_time * 1e-9
            topic = channel.topic
            if topic == "/joint_states":
                pos = dict(zip(msg.name, msg.position))
                if all(n in pos for n in FINGERS):
                    w = pos[FINGERS[0]] + pos[FINGERS[1]]
                    width_at.append((t, w))
                    rows.append((t, topic, f"fingers {w * 100:.2f} cm"))
            elif topic == "/sim_ground_truth/markers":
                for m in msg.markers:
                    if m.ns == target:
                        z = m.pose.position.z
                        z0 = z if z0 is None else z0
                        z_at.append((t, z))
                        rows.append((t, "target", f"x {m.pose.position.x:.3f} y {m.pose.position.y:.3f} z {z:.3f}"))
            elif topic == "/arm/ee_delta":
                rows.append((t, topic, f"({msg.x * 100:+.2f}, {msg.y * 100:+.2f}, {msg.z * 100:+.2f}) cm"))
            elif topic in ("/arm/gripper",):
                rows.append((t, topic, "open" if msg.data else "close"))
            elif topic == "/arm/ee_yaw":
                rows.append((t, topic, f"{msg.data:.3f} rad"))
    rows.sort(key=lambda r: r[0])
    if z0 is None:
        print(f"no ground truth for {target!r} in the recording")
        return

    def z_near(t):
        best = min(z_at, key=lambda p: abs(p[0] - t)) if z_at else (t, z0)
        return best[1]

    losses = []
    for (t0, w0), (t1, w1) in zip(width_at, width_at[1:]):
        if w0 > closed_width >= w1 and z_near(t1) > z0 + 0.05:
            losses.append(t1)
    print(f"{len(losses)} loss(es) of the object from a closed hand above its start height "
          f"(start z {z0:.3f} m): {[round(t, 2) for t in losses]}")
    for t_loss in losses:
        print(f"\n--- {window:g} s before the loss at t = {t_loss:.2f} s (sim time) ---")
        for t, topic, text in rows:
            if t_loss - window <= t <= t_loss + 0.3:
                print(f"{t:9.3f}  {topic:24s} {text}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", choices=("pybullet", "mujoco"), default="mujoco")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--ground-truth-grasp", action="store_true")
    ap.add_argument("--timeout", type=float, default=300.0)
    ap.add_argument("--arm-step-period", type=float, default=0.05, help="fetch.launch.yaml arm_step_period_s on MuJoCo")
    ap.add_argument("--closed-width", type=float, default=0.03, help="finger opening (m) below which the hand is empty")
    ap.add_argument("--window", type=float, default=2.0, help="sim seconds printed before each loss")
    ap.add_argument("--analyse", metavar="MCAP", help="only analyse a recording (needs --target)")
    ap.add_argument("--target", help="the target's ground-truth name, with --analyse")
    a = ap.parse_args(argv)
    if a.analyse:
        analyse(Path(a.analyse), a.target, a.closed_width, a.window)
        return 0
    path, target = record(a)
    analyse(path, target, a.closed_width, a.window)
    return 0


if __name__ == "__main__":
    sys.exit(main())
