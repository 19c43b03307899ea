#!/usr/bin/env python3
"""Does the fetch robot's base move while it stands still, unseen by wheel odometry? Record a fetch, then replay it.

    # 1. record a fetch graph's base and arm topics (evaluator side: it reads /sim_ground_truth)
    ROS_DOMAIN_ID=91 python tools/probes/base_slide.py record out/slide.jsonl &
    ROS_DOMAIN_ID=91 python -m rlstack_mission.evaluate --layouts 1 --seed-base 0 --out out/slide_eval
    kill -INT %1
    # 2. per lift: how far the true base and the wheel odometry moved in the seconds before it
    python tools/probes/base_slide.py lifts out/slide.jsonl
    # 3. the same /cmd_vel and /arm/* commands, at their recorded (wall) times, in process at 60 Hz
    python tools/probes/base_slide.py replay out/slide.jsonl --from -12 --to 1 --spread 0.05 \\
        --object red_cube 2.550 -1.966 0.525 -102

Why: the fetch graph's held grasp target is ~1 cm off the object along the robot's x with drifting
wheel odometry and ~1 mm with exact odometry (docs/reference/mission.md). ``lifts`` shows where that
comes from: after docking, while the arm goes to the look pose and back, the true base moves several
millimetres forward and turns 2-3 deg while the wheels report under a millimetre. A target held in
``odom`` cannot see that. ``replay`` applies the recorded commands to a fresh in-process simulator
(robot teleported to the recorded true pose, the layout's target object placed with ``--object``,
the bridge's arm watchdog hold after 0.5 s without an arm command) and prints its base motion beside
the graph's, to tell the simulator's physics from what only happens in the running graph.

``record`` is an rclpy node; it writes one JSON line per message with the sim-time stamp (``t``) and
the receive wall time (``wall``): /odom, /sim_ground_truth/odom, /grasp_target, map -> odom from /tf,
/cmd_vel, /arm/ee_delta, /arm/ee_yaw, /arm/gripper and the joint positions of /joint_states.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from typing import Dict, List


# ---------------------------------------------------------------------------- record (rclpy)
def record(path: str) -> int:
    import rclpy
    from geometry_msgs.msg import PoseStamped, Twist, Vector3
    from nav_msgs.msg import Odometry
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Bool, Float64
    from tf2_msgs.msg import TFMessage

    out = open(path, "w")
    rclpy.init()
    node = rclpy.create_node("base_slide_record")

    def write(kind: str, stamp=None, **values) -> None:
        stamp = stamp or node.get_clock().now().to_msg()
        out.write(json.dumps({"k": kind, "t": stamp.sec + stamp.nanosec * 1e-9, "wall": time.time(), **values}) + "\n")

    def odometry(kind: str):
        def on(msg) -> None:
            p, q = msg.pose.pose.position, msg.pose.pose.orientation
            write(kind, msg.header.stamp, x=p.x, y=p.y, yaw=_yaw(q))
        return on

    def grasp_target(msg) -> None:
        p, q = msg.pose.position, msg.pose.orientation
        write("grasp_target", msg.header.stamp, frame=msg.header.frame_id, x=p.x, y=p.y, z=p.z, yaw=_yaw(q))

    def tf(msg) -> None:
        for t in msg.transforms:
            if t.child_frame_id == "odom":
                write("map_odom", t.header.stamp, x=t.transform.translation.x, y=t.transform.translation.y,
                      yaw=_yaw(t.transform.rotation))

    node.create_subscription(Odometry, "/odom", odometry("odom"), 50)
    node.create_subscription(Odometry, "/sim_ground_truth/odom", odometry("true"), 50)
    node.create_subscription(PoseStamped, "/grasp_target", grasp_target, 50)
    node.create_subscription(TFMessage, "/tf", tf, 100)
    node.create_subscription(Twist, "/cmd_vel", lambda m: write("cmd_vel", v=m.linear.x, w=m.angular.z), 50)
    node.create_subscription(Vector3, "/arm/ee_delta", lambda m: write("ee", x=m.x, y=m.y, z=m.z), 50)
    node.create_subscription(Float64, "/arm/ee_yaw", lambda m: write("ee_yaw", v=m.data), 50)
    node.create_subscription(Bool, "/arm/gripper", lambda m: write("gripper", v=bool(m.data)), 50)
    node.create_subscription(JointState, "/joint_states",
                             lambda m: write("joints", m.header.stamp, **dict(zip(m.name, m.position))), 50)
    try:
        while rclpy.ok():
            rclpy.spin_once(node, timeout_sec=0.5)
            out.flush()
    except KeyboardInterrupt:
        pass
    finally:
        out.close()
        node.destroy_node()
        rclpy.try_shutdown()
    return 0


def _yaw(q) -> float:
    from sim_bridges.geometry import yaw_from_quat

    return yaw_from_quat((q.x, q.y, q.z, q.w))


# ---------------------------------------------------------------------------- reading a recording
def load(path: str) -> Dict[str, List[dict]]:
    series: Dict[str, List[dict]] = {}
    for line in open(path):
        if line.strip():
            row = json.loads(line)
            series.setdefault(row["k"], []).append(row)
    for rows in series.values():
        rows.sort(key=lambda r: r["wall"])
    return series


def lift_starts(series: Dict[str, List[dict]]) -> List[dict]:
    """The first /grasp_target of each lift (none in the second before it)."""
    gts = series.get("grasp_target", [])
    return [g for i, g in enumerate(gts) if i == 0 or g["wall"] - gts[i - 1]["wall"] > 1.0]


def _near(rows: List[dict], wall: float) -> dict:
    return min(rows, key=lambda r: abs(r["wall"] - wall))


def _motion(a: dict, b: dict) -> tuple:
    """Pose b relative to pose a, in a's frame: forward, left (m), turn (rad)."""
    c, s = math.cos(a["yaw"]), math.sin(a["yaw"])
    dx, dy = b["x"] - a["x"], b["y"] - a["y"]
    return c * dx + s * dy, -s * dx + c * dy, math.remainder(b["yaw"] - a["yaw"], 2 * math.pi)


def lifts(path: str) -> int:
    series = load(path)
    for start in lift_starts(series):
        w2 = start["wall"]
        print(f"lift at sim {start['t']:.2f} s: target in base_link "
              f"({start['x']:.3f}, {start['y']:.3f}, {start['z']:.3f}) m")
        for back in (1, 2, 3, 5, 8):
            o = _motion(_near(series["odom"], w2 - back), _near(series["odom"], w2))
            g = _motion(_near(series["true"], w2 - back), _near(series["true"], w2))
            print(f"  in the {back} s before: wheel odometry {o[0] * 1e3:+6.1f} mm ahead {o[1] * 1e3:+5.1f} left "
                  f"{math.degrees(o[2]):+5.2f} deg | truth {g[0] * 1e3:+6.1f} mm ahead {g[1] * 1e3:+5.1f} left "
                  f"{math.degrees(g[2]):+5.2f} deg")
    return 0


# ---------------------------------------------------------------------------- replay (PyBullet, in process)
def replay(path: str, t_from: float, t_to: float, spread: float, obj, lift: int, rate_hz: int) -> int:
    import numpy as np
    import pybullet as p

    from sim_bridges import make_backend
    from sim_bridges.contract import Pose
    from sim_bridges.robots.mobile_manipulator import ARM_JOINTS

    series = load(path)
    w2 = lift_starts(series)[lift]["wall"]
    w0 = w2 + t_from
    true0 = _near(series["true"], w0)
    commands = sorted((r for k in ("cmd_vel", "ee", "ee_yaw", "gripper") for r in series.get(k, [])
                       if w0 <= r["wall"] <= w2 + t_to), key=lambda r: r["wall"])
    with make_backend("pybullet", physics_rate_hz=240, control_rate_hz=rate_hz) as sim:
        sim.load_scene("home")
        sim.reset(0)
        if spread > 0:
            sim.set_end_effector_step_period(spread)
        if obj:
            name, x, y, z, yaw_deg = obj[0], *(float(v) for v in obj[1:])
            sim.set_object_pose(name, Pose((x, y, z), p.getQuaternionFromEuler((0, 0, math.radians(yaw_deg)))))
        body, cid = sim._robots[0].body, sim._cid   # a tool: teleports the base and reads its true pose
        z = p.getBasePositionAndOrientation(body, physicsClientId=cid)[0][2]
        p.resetBasePositionAndOrientation(body, (true0["x"], true0["y"], z),
                                          p.getQuaternionFromEuler((0, 0, true0["yaw"])), physicsClientId=cid)
        joints0 = _near(series["joints"], w0) if series.get("joints") else None
        if joints0 is not None:   # the arm as it stood in the graph (the IK's null space differs per history)
            index = {p.getJointInfo(body, j, physicsClientId=cid)[1].decode(): j
                     for j in range(p.getNumJoints(body, physicsClientId=cid))}
            arm = [n for n in ARM_JOINTS if n in joints0 and n in index]
            for n in arm:
                p.resetJointState(body, index[n], joints0[n], physicsClientId=cid)
            sim.set_joint_targets(arm, [joints0[n] for n in arm])
        sim.set_base_velocity(0.0, 0.0)
        sim.step(rate_hz // 2)

        def pose() -> dict:
            pos, orn = p.getBasePositionAndOrientation(body, physicsClientId=cid)
            m = np.array(p.getMatrixFromQuaternion(orn)).reshape(3, 3)
            return {"x": pos[0], "y": pos[1], "yaw": math.atan2(m[1, 0], m[0, 0])}

        start, i, t, next_print = pose(), 0, w0, w0
        last_arm, held = w0, True
        print(f"{'s to lift':>9s}  {'replay: ahead mm, turn deg':>28s}  {'graph: ahead mm, turn deg':>27s}")
        while t < w2 + t_to:
            if not held and t - last_arm > 0.5:   # the bridge's arm watchdog: hold where it is
                js = sim.joint_state()
                names = [n for n in js.names if n in ARM_JOINTS]
                sim.set_joint_targets(names, [float(js.position[js.names.index(n)]) for n in names])
                held = True
            while i < len(commands) and commands[i]["wall"] <= t:
                r = commands[i]
                i += 1
                if r["k"] == "cmd_vel":
                    sim.set_base_velocity(r["v"], r["w"])
                elif r["k"] == "gripper":
                    sim.set_gripper(r["v"])
                else:
                    if r["k"] == "ee_yaw":
                        sim.set_end_effector_yaw(r["v"])
                    else:
                        sim.set_end_effector_delta(r["x"], r["y"], r["z"])
                    last_arm, held = t, False
            sim.step(1)
            t += 1.0 / rate_hz
            if t >= next_print:
                mine = _motion(start, pose())
                graph = _motion(true0, _near(series["true"], t))
                print(f"{t - w2:+9.2f}  {mine[0] * 1e3:+14.1f} {math.degrees(mine[2]):+13.2f}  "
                      f"{graph[0] * 1e3:+13.1f} {math.degrees(graph[2]):+13.2f}")
                next_print += 0.5
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    r = sub.add_parser("record", help="record a running fetch graph's topics (rclpy)")
    r.add_argument("out")
    lf = sub.add_parser("lifts", help="per lift: base motion by wheel odometry and by truth before it")
    lf.add_argument("recording")
    rp = sub.add_parser("replay", help="replay the recorded commands in process (PyBullet)")
    rp.add_argument("recording")
    rp.add_argument("--lift", type=int, default=0, help="which lift of the recording (0: the first)")
    rp.add_argument("--from", dest="t_from", type=float, default=-12.0, help="s before the lift to start at")
    rp.add_argument("--to", dest="t_to", type=float, default=1.0, help="s after the lift to end at")
    rp.add_argument("--spread", type=float, default=0.0,
                    help="s each end-effector step is spread over "
                         "(the graph's arm_step_period_s; 0: one control period)")
    rp.add_argument("--rate", type=int, default=60, help="control rate, Hz (the fetch graph's bridge: 60)")
    rp.add_argument("--object", nargs=5, metavar=("NAME", "X", "Y", "Z", "YAW_DEG"),
                    help="place the layout's target (the evaluator prints it: 'red_cube placed at ...')")
    a = ap.parse_args(argv)
    if a.command == "record":
        return record(a.out)
    if a.command == "lifts":
        return lifts(a.recording)
    return replay(a.recording, a.t_from, a.t_to, a.spread, a.object, a.lift, a.rate)


if __name__ == "__main__":
    sys.exit(main())
