"""sim_bridge: a sim_bridges backend (PyBullet) on ordinary ROS 2 topics.

A thin adapter: parameters, topics, timers, QoS, diagnostics and message conversion. Physics and
kinematics live in the backend; command handling (validation, limits, the watchdog and its safe
states), stepping and stream schedules, wheel odometry and the reset's backend calls in
:mod:`rlstack_sim.core` (over :mod:`rlstack_sim.commands`); message conversion in
:mod:`rlstack_sim.convert`. Topics, parameters, services and modes are documented in
docs/reference/sim-bridge.md.
"""

from __future__ import annotations

import dataclasses
import sys
import time
from typing import Dict, List, Optional

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from geometry_msgs.msg import PoseArray, Twist, TwistStamped, Vector3
from nav_msgs.msg import Odometry
from rclpy.clock import Clock as RosClock
from rclpy.clock import ClockType
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import CameraInfo, Image, JointState
from std_msgs.msg import Bool, Float64
from std_srvs.srv import SetBool
from tf2_msgs.msg import TFMessage
from visualization_msgs.msg import MarkerArray

from rlstack_common import run_node
from rlstack_interfaces.srv import MoveObjects, ResetSim, SimStep
from rlstack_sim import convert
from rlstack_sim.bridge_services import BridgeServices
from rlstack_sim.bridge_settings import declare_bridge
from rlstack_sim.commands import VelocityLimiter
from rlstack_sim.config import ConfigError, RateMeter, every_n_steps
from rlstack_sim.core import BaseOdometry, CommandHandler, Stepper, diagnostic_values, make_backend
from rlstack_sim.parameters import depth_noise, odometry_errors

IMAGE_QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=2, reliability=ReliabilityPolicy.RELIABLE)
STATIC_QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1, reliability=ReliabilityPolicy.RELIABLE,
                        durability=DurabilityPolicy.TRANSIENT_LOCAL)


class SimBridge(BridgeServices, Node):
    def __init__(self) -> None:
        super().__init__("sim_bridge")
        # Imported here so that `--help`-style failures and config errors stay cheap.
        from sim_bridges import Capability, backend_names, scene_names
        from sim_bridges.scenes import COLORS

        self._cap, self._colors, self._scene_names = Capability, COLORS, scene_names
        v = declare_bridge(self, scene_names(), backend_names())   # ConfigError for a bad combination
        scene, backend, seed, gt_ns = v.scene, v.backend, v.seed, v.ground_truth_namespace
        physics_rate, control_rate = v.physics_rate_hz, v.control_rate_hz
        self.mode, self.camera_rate, self.camera_enabled = v.mode, v.camera_rate_hz, v.camera_enabled
        self.camera_in_lockstep, self.cmd_vel_stamped = v.camera_in_lockstep, v.cmd_vel_stamped
        self.continuous_clock, self.wall_clock = v.continuous_clock, v.wall_clock
        self.ee_step_period = v.ee_step_period_s
        self.clock_offset = 0.0
        noise = depth_noise(v)
        self.noise = noise if noise.enabled else None
        self.noise_rng = np.random.default_rng([seed, 0xD3])
        self.control_rate = control_rate
        self.period = 1.0 / control_rate
        k_cam = every_n_steps(control_rate, self.camera_rate) if self.camera_enabled else None
        self.gt_ns = gt_ns.strip("/")
        self.sim = make_backend(backend, scene, physics_rate_hz=physics_rate, control_rate_hz=control_rate,
                                gui=v["gui"])
        log = self.get_logger()
        limiter = VelocityLimiter(v["max_linear_speed"], v["max_angular_speed"], v["max_linear_accel"],
                                  v["max_angular_accel"])
        self.commands = CommandHandler(self.sim, limiter, v["command_timeout_s"], v["max_ee_step"], self._cmd_now,
                                       log.info, log.warning)
        self.stepper = Stepper(self.sim, self.commands, self.mode, self.period,
                               every_n_steps(control_rate, v["publish_rate_hz"]),
                               every_n_steps(control_rate, v["ground_truth_rate_hz"]), k_cam, self.camera_in_lockstep)
        self.odometry = BaseOdometry(self.sim, v["wheel_odometry"], odometry_errors(v), seed)
        self.meters = {k: RateMeter() for k in ("state", "ground_truth", "step_calls")}
        self.camera_meters: Dict[str, RateMeter] = {}
        self._scene_entities: List[object] = []
        self._js_cache = None

        # On the wall clock there is no /clock, as on a robot.
        self.clock_pub = None if self.wall_clock else self.create_publisher(Clock, "/clock", 10)
        self.tf_pub = self.create_publisher(TFMessage, "/tf", 100)
        self.tf_static_pub = self.create_publisher(TFMessage, "/tf_static", STATIC_QOS)
        self.diag_pub = self.create_publisher(DiagnosticArray, "/diagnostics", 10)
        self.create_service(ResetSim, "~/reset", self._on_reset)
        self.create_service(MoveObjects, "~/move_objects", self._on_move_objects)
        self.create_service(SimStep, "~/step", self._on_step)
        self.create_service(SetBool, "~/pause", self._on_pause)

        self.sim.load_scene(scene, seed=seed)
        self._setup_scene(scene)
        self._after_reset()
        # the ROS 2 standard simulation services (simulation_interfaces), beside the bridge's own
        from rlstack_sim.sim_interfaces_server import attach
        self.standard_services = attach(self)

        # Timers run on the steady wall clock even if use_sim_time is set for this node: the
        # bridge is the source of /clock and must never wait for it.
        wall = RosClock(clock_type=ClockType.STEADY_TIME)
        self.create_timer(1.0, self._publish_diagnostics, clock=wall)
        if self.mode == "realtime":
            self.create_timer(self.period, lambda: self.stepper.realtime_tick(self._publish_due), clock=wall)
            if k_cam is not None and self.camera_rate > 0:
                self.create_timer(1.0 / self.camera_rate, self._publish_cameras, clock=wall)
        elif self.mode == "fast":
            self.create_timer(0.001, lambda: self.stepper.fast_tick(self._publish_due), clock=wall)
        self.get_logger().info(
            f"scene '{scene}' on {backend}: mode {self.mode}, physics {physics_rate:g} Hz, control "
            f"{control_rate:g} Hz, capabilities: {', '.join(sorted(map(str, self.sim.capabilities)))}")

    # ================================================================== scene set-up
    def _setup_scene(self, scene: str) -> None:
        """Create the scene-dependent publishers/subscriptions and publish /tf_static."""
        from sim_bridges import make_scene

        for entity in self._scene_entities:
            if hasattr(entity, "topic_name") and hasattr(entity, "publish"):
                self.destroy_publisher(entity)
            else:
                self.destroy_subscription(entity)
        self._scene_entities = []
        self.scene = scene
        spec = make_scene(scene)
        caps = self.sim.capabilities
        if self.ee_step_period > 0 and self._cap.END_EFFECTOR_DELTA in caps:
            self.sim.set_end_effector_step_period(self.ee_step_period)
        self.has_base = self._cap.BASE_VELOCITY in caps
        self.root_frame = "odom" if self.has_base else "world"
        channels = self.commands.configure(spec, self.sim.joint_limits(), caps, self._cap)

        pub = self._scene_pub
        self.joint_pub = pub(JointState, "joint_states", 10) if self.sim.joint_names else None
        self.odom_pub = pub(Odometry, "odom", 10) if self.has_base else None
        # wheel odometry (drift): ground truth is then published in 'map' (= the world)
        self.gt_frame = "map" if self.odometry.configure(spec, self.has_base) else self.root_frame
        k_gt = self.stepper.k_gt
        self.gt_pose_pub = pub(PoseArray, f"{self.gt_ns}/poses", 10) if k_gt else None
        self.gt_marker_pub = pub(MarkerArray, f"{self.gt_ns}/markers", 10) if k_gt else None
        # the base's true pose (map = world), for evaluators of localisation; sim-only like the rest
        self.gt_odom_pub = pub(Odometry, f"{self.gt_ns}/odom", 10) if k_gt and self.has_base else None
        self.cameras = {}
        self.camera_meters = {}
        if self.camera_enabled and self._cap.CAMERA in caps:
            for cam in self.sim.camera_names:
                self.cameras[cam] = (pub(Image, f"{cam}/image_raw", IMAGE_QOS),
                                     pub(Image, f"{cam}/depth/image_raw", IMAGE_QOS),
                                     pub(CameraInfo, f"{cam}/camera_info", IMAGE_QOS))
                self.camera_meters[cam] = RateMeter()

        c = self.commands
        subscriptions = {
            "cmd_vel": (TwistStamped if self.cmd_vel_stamped else Twist, "cmd_vel", self._on_cmd_vel),
            "joint_targets": (JointState, "arm/joint_targets", lambda m: c.joint_targets(m.name, m.position)),
            "ee_delta": (Vector3, "arm/ee_delta", lambda m: c.ee_delta(m.x, m.y, m.z)),
            "ee_yaw": (Float64, "arm/ee_yaw", lambda m: c.ee_yaw(m.data)),
            "gripper": (Bool, "arm/gripper", lambda m: c.gripper(bool(m.data))),
            "cart_force": (Float64, "cartpole/force", lambda m: c.cart_force(m.data)),
            "plate_angles": (Vector3, "ball_plate/angles", lambda m: c.plate_angles(m.x, m.y, m.z)),
        }
        for channel in channels:
            self._scene_sub(*subscriptions[channel])
        self._publish_static_tf(spec)

    def _scene_pub(self, msg_type, topic, qos):
        p = self.create_publisher(msg_type, topic, qos)
        self._scene_entities.append(p)
        return p

    def _scene_sub(self, msg_type, topic, callback):
        """A command subscription that, on each turn, also takes every message queued behind the
        first, in order. Why: the wait-set executor takes one message per subscription per turn,
        and a bridge turn that renders the camera lasts 50-75 ms on a busy machine; commands sent at
        20 Hz then queued up to the depth of 10 and were applied ~0.5 s late (a gripper 'close' that
        came after the mission had already judged the fingers; an arm that lagged and overshot).
        The EventsExecutor drained them this way too."""
        holder: List[object] = []

        def drain(msg) -> None:
            callback(msg)
            sub = holder[0]
            while True:
                with sub.handle:
                    taken = sub.handle.take_message(sub.msg_type, sub.raw)
                if taken is None:
                    return
                callback(taken[0])

        s = self.create_subscription(msg_type, topic, drain, 10)
        holder.append(s)
        self._scene_entities.append(s)
        return s

    def _publish_static_tf(self, spec) -> None:
        """base_link (or world) -> <camera>_link -> <camera>_optical_frame."""
        stamp = self._stamp()
        transforms = []
        base_pose = self.sim.base_odometry().pose if self.has_base else None
        robot_cams = {c.name for r in spec.robots for c in r.cameras}
        for cam in self.sim.camera_names:
            on_base = cam in robot_cams and self.has_base
            pose = self.sim.camera_frame(cam).pose  # one render at start-up
            transforms += convert.camera_static_transforms(
                cam, pose, "base_link" if on_base else self.root_frame, base_pose if on_base else None, stamp)
        self.tf_static_pub.publish(TFMessage(transforms=transforms))

    # ================================================================== time / reset
    def _stamp(self, sim_t: Optional[float] = None):
        """The message time of sim time ``sim_t`` (default: now): sim time plus the offset of earlier
        episodes (continuous_clock), or with wall_clock the system time less the age of ``sim_t``."""
        if self.wall_clock:
            return convert.time_msg(time.time() - (0.0 if sim_t is None else max(0.0, self.sim.sim_time - sim_t)))
        return convert.time_msg((self.sim.sim_time if sim_t is None else sim_t) + self.clock_offset)

    def _cmd_now(self) -> float:
        """Watchdog clock: wall time in realtime mode, sim time otherwise."""
        return time.monotonic() if self.mode == "realtime" else self.sim.sim_time

    def _after_reset(self) -> None:
        self.commands.reset()
        self.stepper.reset()
        self._js_cache = None
        self.odometry.reset(self.has_base)
        self._publish_due(force=True)

    def _base_odometry(self):
        """(Odometry, covariance 6x6 or None): the true pose, or the wheel odometry when it is on."""
        return self.odometry.get(self.stepper.steps_total)

    # ================================================================== publishing
    def _publish_due(self, force: bool = False) -> None:
        publish = {"clock": self._publish_clock, "state": self._publish_state,
                   "ground_truth": self._publish_ground_truth, "camera": self._publish_cameras}
        lockstep = self.mode == "lockstep"
        for stream in self.stepper.due(force):
            # Lockstep: a stream nobody subscribes to is not built at all (its messages would go to no one;
            # the topics are volatile, so a later subscriber would not get them either). A training client
            # that takes its observations from the step response then costs no publishes.
            if lockstep and not self._stream_listened(stream):
                continue
            publish[stream]()

    def _stream_listened(self, stream: str) -> bool:
        pubs = {"clock": (self.clock_pub,), "state": (self.joint_pub, self.odom_pub, self.tf_pub),
                "ground_truth": (self.gt_pose_pub, self.gt_marker_pub, self.gt_odom_pub),
                "camera": tuple(p for pubs in self.cameras.values() for p in pubs)}[stream]
        return any(p is not None and p.get_subscription_count() for p in pubs)

    def _publish_clock(self) -> None:
        if self.clock_pub is not None:
            self.clock_pub.publish(Clock(clock=self._stamp()))

    def _joint_state_msg(self):
        if self._js_cache is None or self._js_cache[0] != self.stepper.steps_total:
            self._js_cache = (self.stepper.steps_total,
                              convert.joint_state_msg(self.sim.joint_state(), self._stamp()))
        return self._js_cache[1]

    def _publish_state(self) -> None:
        self.meters["state"].tick()
        if self.joint_pub is not None:
            self.joint_pub.publish(self._joint_state_msg())
        stamp = self._stamp()
        # The robots' link tree (what robot_state_publisher would compute from /joint_states):
        # fixed-base roots hang from world, the mobile base's root from odom (below).
        transforms = [convert.transform_msg(t.parent, t.child, t.pose.position, t.pose.orientation, stamp)
                      for t in self.sim.link_transforms()]
        if self.has_base:
            odom, cov = self._base_odometry()
            self.odom_pub.publish(convert.odometry_msg(odom, stamp, cov))
            transforms.append(convert.odom_transform(odom, stamp))
        self.tf_pub.publish(TFMessage(transforms=transforms))

    def _publish_ground_truth(self) -> None:
        if self.gt_pose_pub is None:
            return
        if self.gt_odom_pub is not None and self.gt_odom_pub.get_subscription_count():
            truth = dataclasses.replace(self.sim.base_odometry(), frame_id=self.gt_frame)
            self.gt_odom_pub.publish(convert.odometry_msg(truth, self._stamp()))
        if not (self.gt_pose_pub.get_subscription_count() or self.gt_marker_pub.get_subscription_count()):
            return
        self.meters["ground_truth"].tick()
        poses, markers = convert.ground_truth_msgs(self.sim.ground_truth(), self.gt_frame,
                                                   self._stamp(), self._colors)
        self.gt_pose_pub.publish(poses)
        self.gt_marker_pub.publish(markers)

    def _publish_cameras(self) -> None:
        for name, pubs in self.cameras.items():
            if not any(p.get_subscription_count() for p in pubs):
                continue  # rendering is the expensive part: only when someone listens
            frame = self.sim.camera_frame(name)
            if self.noise is not None:   # robot mode: the depth a real RGB-D camera would give
                k = frame.intrinsics
                depth, rgb = self.noise.apply(frame.depth, k.fx, k.fy, k.cx, k.cy, self.noise_rng, frame.rgb)
                frame = dataclasses.replace(frame, depth=depth, rgb=rgb)
            stamp = self._stamp(frame.stamp)
            rgb_pub, depth_pub, info_pub = pubs
            rgb_pub.publish(convert.rgb_msg(frame, stamp))
            depth_pub.publish(convert.depth_msg(frame, stamp))
            info_pub.publish(convert.camera_info_msg(frame.intrinsics, frame.frame_id, stamp))
            self.camera_meters[name].tick()

    def _publish_diagnostics(self) -> None:
        warn, message, values = diagnostic_values(self.stepper, self.commands, self.scene, self.control_rate,
                                                  self.meters, self.camera_meters, time.monotonic())
        status = DiagnosticStatus(level=DiagnosticStatus.WARN if warn else DiagnosticStatus.OK,
                                  name="sim_bridge: simulation", message=message, hardware_id=f"sim:{self.scene}",
                                  values=[KeyValue(key=k, value=v) for k, v in values.items()])
        msg = DiagnosticArray(status=[status])
        msg.header.stamp = self._stamp()
        self.diag_pub.publish(msg)

    # ================================================================== command callbacks
    def _on_cmd_vel(self, msg) -> None:
        t = msg.twist if self.cmd_vel_stamped else msg
        self.commands.cmd_vel(t.linear.x, t.angular.z, (t.linear.y, t.linear.z, t.angular.x, t.angular.y))

    def use_fast_lane(self) -> bool:
        """Lockstep: spin the step/reset calls and the command topics on the fast lane
        (``rlstack_common.fast_lane``); realtime and fast mode keep the executor (timers drive them)."""
        return self.mode == "lockstep"

    def destroy_node(self) -> None:
        try:
            self.sim.close()
        except Exception:  # noqa: BLE001 - shutting down anyway
            pass
        super().destroy_node()


def main(args: Optional[List[str]] = None) -> int:
    try:
        return run_node(SimBridge, args)
    except ConfigError as exc:
        print(f"sim_bridge: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
