"""sim_bridge: a sim_bridges backend (PyBullet) on ordinary ROS 2 topics.

A thin adapter: parameters, topics, timers, QoS and diagnostics. Physics and kinematics
live in the backend; command validation, limits and the watchdog in
:mod:`rlstack_sim.commands`; message conversion in :mod:`rlstack_sim.convert`.
Topics, parameters, services and modes are documented in docs/sim_bridge.md.
"""

from __future__ import annotations

import dataclasses
import math
import sys
import time
from typing import Callable, Dict, List, Optional

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

from rlstack_common import declare_parameter, run_node
from rlstack_interfaces.srv import ResetSim, SimStep
from rlstack_sim import convert
from rlstack_sim.commands import (BaseStallMonitor, CommandRejected, JointBounds, RejectLog, VelocityLimiter, Watchdog,
                                  clip_ee_delta, hold_targets, validate_joint_targets, validate_scalar,
                                  validate_twist)
from sim_bridges.sensor_noise import DepthNoise
from sim_bridges.geometry import quat_to_matrix
from rlstack_sim.config import MODES, ConfigError, RateMeter, check_choice, every_n_steps, steps_per_control

# Wall-clock budget of one fast-mode timer callback: commands and services are served between slices.
FAST_SLICE_S = 0.02
# Realtime: a tick that finds itself more than this many control steps behind skips the rest
# (counted as an overrun) instead of trying to catch up forever.
MAX_CATCHUP_STEPS = 12
WARN_PERIOD_S = 5.0

IMAGE_QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=2, reliability=ReliabilityPolicy.RELIABLE)
STATIC_QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1, reliability=ReliabilityPolicy.RELIABLE,
                        durability=DurabilityPolicy.TRANSIENT_LOCAL)


class SimBridge(Node):
    def __init__(self) -> None:
        super().__init__("sim_bridge")
        # Imported here so that `--help`-style failures and config errors stay cheap.
        from sim_bridges import Capability, backend_names, scene_names
        from sim_bridges.scenes import COLORS

        self._cap, self._colors, self._scene_names = Capability, COLORS, scene_names
        d = lambda *a, **k: declare_parameter(self, *a, **k)  # noqa: E731
        scene = d("scene", "home", "Scene to load", constraints="one of: " + ", ".join(scene_names()))
        backend = d("backend", "pybullet", "Simulator backend", constraints="one of: " + ", ".join(backend_names()))
        seed = d("seed", 0, "Seed of the initial reset (object placement, initial state)", min_value=0,
                 max_value=2**31 - 1)
        physics_rate = d("physics_rate_hz", 240.0, "Physics integration rate, Hz", min_value=1.0, max_value=10000.0)
        control_rate = d("control_rate_hz", 60.0, "Control rate, Hz; must divide physics_rate_hz",
                         min_value=1.0, max_value=10000.0)
        self.mode = d("mode", "realtime", "Stepping mode", constraints="one of: " + ", ".join(MODES))
        self.camera_rate = d("camera_rate_hz", 20.0, "Camera render/publish rate, Hz (0: off)",
                             min_value=0.0, max_value=1000.0)
        self.camera_enabled = d("camera_enabled", True, "Render and publish the scene's cameras")
        self.camera_in_lockstep = d("camera_in_lockstep", False,
                                    "Lockstep mode: also render cameras (every camera period of sim time)")
        noise = DepthNoise(
            enabled=d("depth_noise", False, "Make published depth like an RGB-D camera's: range noise growing with "
                      "z^2, disparity quantisation, no return at depth edges and grazing angles (robot mode: on)"),
            k_z2=d("depth_noise_k", DepthNoise.k_z2, "Depth noise std = depth_noise_sigma0 + k z^2, k in 1/m "
                   "(0.0025: a RealSense D435)", min_value=0.0, max_value=1.0),
            sigma_0=d("depth_noise_sigma0", DepthNoise.sigma_0, "Range-independent depth noise std, m",
                      min_value=0.0, max_value=1.0),
            dropout=d("depth_noise_dropout", DepthNoise.dropout, "Share of depth pixels lost at random",
                      min_value=0.0, max_value=1.0),
            rgb_sigma=d("rgb_noise_std", 0.0, "RGB noise std, 0..255 units (0: off; applies with depth_noise)",
                        min_value=0.0, max_value=255.0))
        self.noise = noise if noise.enabled else None
        from sim_bridges.wheel_odometry import OdometryErrors
        e0 = OdometryErrors()
        self.wheel_odometry = d("wheel_odometry", False, "Publish /odom and odom -> base_link integrated from the "
                                "wheel angles with the odom_* errors below (drift; robot mode: on) instead of the "
                                "true pose; ground truth is then published in 'map' (= the world)")
        self.odom_errors = OdometryErrors(
            left_radius_scale=d("odom_left_radius_scale", e0.left_radius_scale, "Wheel odometry: believed / true "
                                "left wheel radius", min_value=0.5, max_value=1.5),
            right_radius_scale=d("odom_right_radius_scale", e0.right_radius_scale, "Wheel odometry: believed / true "
                                 "right wheel radius", min_value=0.5, max_value=1.5),
            track_scale=d("odom_track_scale", e0.track_scale, "Wheel odometry: believed / effective track width",
                          min_value=0.5, max_value=1.5),
            slip_xx=d("odom_slip_xx", e0.slip_xx, "Wheel odometry: distance noise std after 1 m driven, m/sqrt(m)",
                      min_value=0.0, max_value=1.0),
            slip_thth=d("odom_slip_thth", e0.slip_thth, "Wheel odometry: heading noise std after 1 rad turned, "
                        "rad/sqrt(rad)", min_value=0.0, max_value=1.0),
            slip_ths=d("odom_slip_ths", e0.slip_ths, "Wheel odometry: heading noise std after 1 m driven, "
                       "rad/sqrt(m)", min_value=0.0, max_value=1.0),
            yaw_bias=d("odom_yaw_bias", e0.yaw_bias, "Wheel odometry: yaw-rate bias while the wheels turn, rad/s",
                       min_value=-1.0, max_value=1.0))
        self.odom_seed = seed
        self.noise_rng = np.random.default_rng([seed, 0xD3])
        publish_rate = d("publish_rate_hz", 60.0, "Rate of /joint_states, /odom, /tf, Hz of sim time (capped at the"
                         " control rate; 0: off)", min_value=0.0, max_value=10000.0)
        gt_rate = d("ground_truth_rate_hz", 10.0, "Rate of the ground-truth topics, Hz of sim time (0: off)",
                    min_value=0.0, max_value=10000.0)
        self.cmd_vel_stamped = d("cmd_vel_stamped", False, "/cmd_vel type: false Twist, true TwistStamped")
        timeout = d("command_timeout_s", 0.5, "Command watchdog: stale commands -> safe state, s (0: off); "
                    "wall time in realtime mode, sim time otherwise", min_value=0.0, max_value=3600.0)
        max_v = d("max_linear_speed", 1.0, "Base |linear.x| limit, m/s (clipped)", min_value=0.0, max_value=100.0)
        max_w = d("max_angular_speed", 2.0, "Base |angular.z| limit, rad/s (clipped)", min_value=0.0, max_value=100.0)
        max_a = d("max_linear_accel", 1.0, "Base linear acceleration limit, m/s^2 (0: none)",
                  min_value=0.0, max_value=1000.0)
        max_alpha = d("max_angular_accel", 3.0, "Base angular acceleration limit, rad/s^2 (0: none)",
                      min_value=0.0, max_value=1000.0)
        self.max_ee_step = d("max_ee_step", 0.05, "Longest end-effector delta per message, m (longer: scaled down)",
                             min_value=0.001, max_value=1.0)
        gui = d("gui", False, "Open the simulator's GUI window")
        self.continuous_clock = d("continuous_clock", False, "Keep /clock and stamps running on across resets "
                                  "(a reset adds the elapsed sim time to an offset) instead of restarting at 0; for "
                                  "graphs whose nodes must never see time jump back (the fetch graph)")
        self.clock_offset = 0.0
        gt_ns = d("ground_truth_namespace", "sim_ground_truth", "Namespace of the sim-only ground-truth topics")

        check_choice("scene", scene, scene_names())
        check_choice("backend", backend, backend_names())
        check_choice("mode", self.mode, MODES)
        steps_per_control(physics_rate, control_rate)
        if not gt_ns.strip("/"):
            raise ConfigError("ground_truth_namespace must not be empty")

        self.control_rate = control_rate
        self.period = 1.0 / control_rate
        self.k_state = every_n_steps(control_rate, publish_rate)
        self.k_gt = every_n_steps(control_rate, gt_rate)
        self.k_cam = every_n_steps(control_rate, self.camera_rate) if self.camera_enabled else None
        self.gt_ns = gt_ns.strip("/")
        self.sim = self._make_backend(backend, scene, physics_rate_hz=physics_rate, control_rate_hz=control_rate,
                                      gui=gui)
        self.limiter = VelocityLimiter(max_v, max_w, max_a, max_alpha)
        self.stall_monitor = BaseStallMonitor()
        self.watchdog = Watchdog(timeout)
        self.rejects = RejectLog(WARN_PERIOD_S)
        self.clipped: Dict[str, int] = {}
        self.paused = False
        self.step_calls = 0
        self.overruns = 0
        self.steps_total = 0  # control steps since start (not reset): realtime factor
        self.meters = {k: RateMeter() for k in ("steps", "state", "ground_truth", "step_calls")}
        self.camera_meters: Dict[str, RateMeter] = {}
        self._last_diag_wall: Optional[float] = None
        self._last_diag_steps = 0
        self._scene_entities: List[object] = []
        self.resets = 0   # wheel odometry: a fresh noise stream per episode

        self.clock_pub = self.create_publisher(Clock, "/clock", 10)
        self.tf_pub = self.create_publisher(TFMessage, "/tf", 100)
        self.tf_static_pub = self.create_publisher(TFMessage, "/tf_static", STATIC_QOS)
        self.diag_pub = self.create_publisher(DiagnosticArray, "/diagnostics", 10)
        self.create_service(ResetSim, "~/reset", self._on_reset)
        self.create_service(SimStep, "~/step", self._on_step)
        self.create_service(SetBool, "~/pause", self._on_pause)

        self.sim.load_scene(scene, seed=seed)
        self._setup_scene(scene)
        self._after_reset()

        # Timers run on the steady wall clock even if use_sim_time is set for this node: the
        # bridge is the source of /clock and must never wait for it.
        wall = RosClock(clock_type=ClockType.STEADY_TIME)
        self.create_timer(1.0, self._publish_diagnostics, clock=wall)
        if self.mode == "realtime":
            self.create_timer(self.period, self._realtime_tick, clock=wall)
            if self.k_cam is not None and self.camera_rate > 0:
                self.create_timer(1.0 / self.camera_rate, self._camera_tick, clock=wall)
        elif self.mode == "fast":
            self.create_timer(0.001, self._fast_tick, clock=wall)
        self.get_logger().info(
            f"scene '{scene}' on {backend}: mode {self.mode}, physics {physics_rate:g} Hz, control "
            f"{control_rate:g} Hz, capabilities: {', '.join(sorted(map(str, self.sim.capabilities)))}")

    @staticmethod
    def _make_backend(backend: str, scene: str, **kwargs):
        """The backend, or a ConfigError (one line, exit 2) for a scene it lacks or an engine not installed."""
        from sim_bridges import BackendUnavailable, backend_scenes, make_backend

        if scene not in backend_scenes(backend):
            raise ConfigError(f"backend '{backend}' does not build scene '{scene}' (it builds: "
                              f"{', '.join(backend_scenes(backend))}); use backend:=pybullet for it")
        try:
            return make_backend(backend, **kwargs)
        except (BackendUnavailable, ValueError) as exc:
            raise ConfigError(str(exc)) from None

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
        C = self._cap
        self.has_base = C.BASE_VELOCITY in caps
        self.root_frame = "odom" if self.has_base else "world"
        limits = self.sim.joint_limits()
        position_joints = [n for r in spec.robots for n in r.position_joints]
        fingers = {n for r in spec.robots if r.arm is not None for n in r.arm.finger_joints}
        self.controllable = {n: JointBounds(limits[n].lower, limits[n].upper) for n in position_joints}
        self.hold_joints = {n: b for n, b in self.controllable.items() if n not in fingers}
        self.cart_max_force = next((r.cart_max_force for r in spec.robots if r.cart_joint), 0.0)
        plate = next((r.plate_joints for r in spec.robots if r.plate_joints), None)
        self.plate_bounds = [self.controllable[j] for j in plate] if plate else []

        pub = self._scene_pub
        self.joint_pub = pub(JointState, "joint_states", 10) if self.sim.joint_names else None
        self.odom_pub = pub(Odometry, "odom", 10) if self.has_base else None
        self.wheel_odo = None
        if self.has_base and self.wheel_odometry:   # drift: sim_bridges.wheel_odometry
            from sim_bridges.wheel_odometry import WheelOdometry
            dd = next(r.diff_drive for r in spec.robots if r.diff_drive is not None)
            self.wheel_odo = (WheelOdometry(dd.wheel_radius, dd.track_width, self.odom_errors),
                              dd.left_wheel_joint, dd.right_wheel_joint)
            self.gt_frame = "map"
        else:
            self.gt_frame = self.root_frame
        self.gt_pose_pub = pub(PoseArray, f"{self.gt_ns}/poses", 10) if self.k_gt else None
        self.gt_marker_pub = pub(MarkerArray, f"{self.gt_ns}/markers", 10) if self.k_gt else None
        # the base's true pose (map = world), for evaluators of localisation; sim-only like the rest
        self.gt_odom_pub = pub(Odometry, f"{self.gt_ns}/odom", 10) if self.k_gt and self.has_base else None
        self.cameras = {}
        self.camera_meters = {}
        if self.camera_enabled and C.CAMERA in caps:
            for cam in self.sim.camera_names:
                self.cameras[cam] = (pub(Image, f"{cam}/image_raw", IMAGE_QOS),
                                     pub(Image, f"{cam}/depth/image_raw", IMAGE_QOS),
                                     pub(CameraInfo, f"{cam}/camera_info", IMAGE_QOS))
                self.camera_meters[cam] = RateMeter()

        self.watchdog = Watchdog(self.watchdog.timeout_s)
        self.gripper_open: Optional[bool] = None   # last gripper command (None: none yet)
        sub = self._scene_sub
        if self.has_base:
            sub(TwistStamped if self.cmd_vel_stamped else Twist, "cmd_vel", self._on_cmd_vel)
            self.watchdog.add("base")
        if C.JOINT_POSITION_CONTROL in caps:
            sub(JointState, "arm/joint_targets", self._on_joint_targets)
            self.watchdog.add("arm")
        if C.END_EFFECTOR_DELTA in caps:
            sub(Vector3, "arm/ee_delta", self._on_ee_delta)
            self.watchdog.add("arm")
        if C.GRIPPER in caps:
            sub(Bool, "arm/gripper", self._on_gripper)
        if C.CART_FORCE in caps:
            sub(Float64, "cartpole/force", self._on_cart_force)
            self.watchdog.add("cart")
        if C.PLATE_ANGLES in caps:
            sub(Vector3, "ball_plate/angles", self._on_plate_angles)
            self.watchdog.add("plate")
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

    # ================================================================== time / stepping
    def _stamp(self):
        """The message time of now: sim time, plus the offset of earlier episodes (continuous_clock)."""
        return convert.time_msg(self.sim.sim_time + self.clock_offset)

    def _cmd_now(self) -> float:
        """Watchdog clock: wall time in realtime mode, sim time otherwise."""
        return time.monotonic() if self.mode == "realtime" else self.sim.sim_time

    def _after_reset(self) -> None:
        self.limiter.reset()
        self.watchdog.reset()
        self.steps = 0  # control steps since the last reset
        self.commands_received = 0  # accepted command messages since the last reset (SimStep answer)
        self.next_due = {"clock": 0, "state": 0, "ground_truth": 0, "camera": 0}
        self._rt_anchor = time.monotonic()
        self._rt_done = 0
        self._js_cache = None
        self._odo_cache = None
        if self.has_base and self.wheel_odo is not None:   # odom starts where the robot is (= the world)
            pose = self.sim.base_odometry().pose
            r = quat_to_matrix(pose.orientation)
            self._odo_z = float(pose.position[2])
            self.wheel_odo[0].reset((float(pose.position[0]), float(pose.position[1]), math.atan2(r[1, 0], r[0, 0])),
                                    seed=self.odom_seed + self.resets)
            self.resets += 1
        self._publish_due(force=True)

    def _base_odometry(self):
        """(Odometry, covariance 6x6 or None): the true pose, or the wheel odometry when it is on
        (integrated up to the current step, once per step)."""
        if self.wheel_odo is None:
            return self.sim.base_odometry(), None
        if self._odo_cache is None or self._odo_cache[0] != self.steps_total:
            from sim_bridges.contract import Odometry as SimOdometry, Pose as SimPose, Twist as SimTwist
            odo, left, right = self.wheel_odo
            js = self.sim.joint_state()
            x, y, yaw = odo.update(js.position[js.names.index(left)], js.position[js.names.index(right)],
                                   self.sim.sim_time)
            msg = SimOdometry(stamp=self.sim.sim_time,
                              pose=SimPose([x, y, self._odo_z], [0.0, 0.0, math.sin(yaw / 2), math.cos(yaw / 2)]),
                              twist=SimTwist([odo.v, 0.0, 0.0], [0.0, 0.0, odo.w]))
            self._odo_cache = (self.steps_total, msg, odo.covariance6())
        return self._odo_cache[1], self._odo_cache[2]

    def _stream_period(self, stream: str) -> Optional[int]:
        if stream == "clock":
            return self.k_state if self.mode == "fast" and self.k_state else 1
        if stream == "state":
            return self.k_state
        if stream == "ground_truth":
            return self.k_gt
        if stream == "camera":
            if self.mode == "realtime" or (self.mode == "lockstep" and not self.camera_in_lockstep):
                return None  # realtime: own wall-clock timer; lockstep: only when asked
            return self.k_cam
        return None

    def _steps_to_next_publication(self) -> int:
        gaps = [self.next_due[s] - self.steps for s in self.next_due if self._stream_period(s)]
        return max(1, min(gaps)) if gaps else 1 << 30

    def _run_steps(self, n: int, publish_inside: bool = False) -> None:
        """Advance ``n`` control steps: acceleration ramp per step, watchdog deadlines between
        batches (sim-time modes), publications inside the run when ``publish_inside``."""
        sim, sim_clock = self.sim, self.mode != "realtime"
        while n > 0:
            if sim_clock:
                self._poll_watchdog(sim.sim_time)
            batch = n
            if self.has_base and not self.limiter.settled:
                v, w = self.limiter.update(self.period)
                sim.set_base_velocity(v, w)
                batch = 1
            elif sim_clock and (deadline := self.watchdog.deadline()) is not None:
                batch = min(batch, max(1, math.ceil((deadline - sim.sim_time) / self.period - 1e-9)))
            if publish_inside:
                batch = min(batch, self._steps_to_next_publication())
            sim.step(batch)
            n -= batch
            self.steps += batch
            self.steps_total += batch
            self.meters["steps"].tick(batch)
            if publish_inside:
                self._publish_due()
        if sim_clock:
            self._poll_watchdog(sim.sim_time)

    def _realtime_tick(self) -> None:
        now = time.monotonic()
        self._poll_watchdog(now)
        if self.paused:
            return
        behind = int((now - self._rt_anchor) / self.period) - self._rt_done
        if behind <= 0:
            return
        if behind > MAX_CATCHUP_STEPS:  # e.g. the process was stopped: drop the backlog
            self.overruns += 1
            self._rt_anchor, self._rt_done, behind = now - self.period, 0, 1
        self._run_steps(behind)
        self._rt_done += behind
        self._publish_due()

    def _fast_tick(self) -> None:
        if self.paused:
            return
        end = time.monotonic() + FAST_SLICE_S
        while time.monotonic() < end:
            self._run_steps(min(self._steps_to_next_publication(), 240), publish_inside=True)

    def _camera_tick(self) -> None:
        self._publish_cameras()

    # ================================================================== publishing
    def _publish_due(self, force: bool = False) -> None:
        for stream, publish in (("clock", self._publish_clock), ("state", self._publish_state),
                                ("ground_truth", self._publish_ground_truth), ("camera", self._publish_cameras)):
            k = self._stream_period(stream)
            if k and (force or self.steps >= self.next_due[stream]):
                publish()
                self.next_due[stream] = (self.steps // k + 1) * k

    def _publish_clock(self) -> None:
        self.clock_pub.publish(Clock(clock=self._stamp()))

    def _joint_state_msg(self):
        if self._js_cache is None or self._js_cache[0] != self.steps_total:
            self._js_cache = (self.steps_total,
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
            stamp = convert.time_msg(frame.stamp + self.clock_offset)
            rgb_pub, depth_pub, info_pub = pubs
            rgb_pub.publish(convert.rgb_msg(frame, stamp))
            depth_pub.publish(convert.depth_msg(frame, stamp))
            info_pub.publish(convert.camera_info_msg(frame.intrinsics, frame.frame_id, stamp))
            self.camera_meters[name].tick()

    def _publish_diagnostics(self) -> None:
        now = time.monotonic()
        rtf = 0.0
        if self._last_diag_wall is not None and now > self._last_diag_wall:
            rtf = (self.steps_total - self._last_diag_steps) * self.period / (now - self._last_diag_wall)
        self._last_diag_wall, self._last_diag_steps = now, self.steps_total
        values = {
            "scene": self.scene, "mode": self.mode, "paused": str(self.paused).lower(),
            "sim_time_s": f"{self.sim.sim_time:.4f}",
            "control_rate_hz": f"{self.control_rate:g}",
            "achieved_control_steps_per_s": f"{self.meters['steps'].sample(now):.1f}",
            "realtime_factor": f"{rtf:.3f}",
            "state_publish_hz": f"{self.meters['state'].sample(now):.1f}",
            "ground_truth_publish_hz": f"{self.meters['ground_truth'].sample(now):.1f}",
            "step_service_calls_per_s": f"{self.meters['step_calls'].sample(now):.1f}",
            "realtime_overruns": str(self.overruns),
            "watchdog": self.watchdog.summary(),
            "watchdog_timeouts": str(self.watchdog.timeouts),
            "rejected_total": str(self.rejects.total),
        }
        for cam, meter in self.camera_meters.items():
            values[f"camera_hz.{cam}"] = f"{meter.sample(now):.1f}"
        for key, count in sorted(self.rejects.counts.items()):
            values[f"rejected.{key}"] = str(count)
        for key, count in sorted(self.clipped.items()):
            values[f"clipped.{key}"] = str(count)
        level, message = DiagnosticStatus.OK, f"{self.mode}, rtf {rtf:.2f}"
        if self.mode == "realtime" and not self.paused and 0 < rtf < 0.9:
            level, message = DiagnosticStatus.WARN, f"realtime factor {rtf:.2f} < 0.9"
        stall = self._check_base_stall()
        values["base_stalls"] = str(self.stall_monitor.stalls)
        if stall:
            level, message = DiagnosticStatus.WARN, stall
        status = DiagnosticStatus(level=level, name="sim_bridge: simulation", message=message,
                                  hardware_id=f"sim:{self.scene}",
                                  values=[KeyValue(key=k, value=v) for k, v in values.items()])
        msg = DiagnosticArray(status=[status])
        msg.header.stamp = self._stamp()
        self.diag_pub.publish(msg)

    def _check_base_stall(self) -> str:
        """A base commanded to move that does not (BaseStallMonitor): warn with the evidence and
        re-send the latched wheel command. Returns the warning while the stall lasts."""
        if not self.has_base or self.paused:
            return ""
        tw = self.sim.base_odometry().twist
        measured = (float(tw.linear[0]), float(tw.angular[2]))
        if self.stall_monitor.update(self.limiter.current, measured, self.sim.sim_time):
            js = self.sim.joint_state()
            wheels = {n: round(float(v), 3) for n, v in zip(js.names, js.velocity) if "wheel" in n}
            self.get_logger().warning(
                f"base stalled: applying (v {self.limiter.current[0]:.3f} m/s, w {self.limiter.current[1]:.3f} "
                f"rad/s) for {self.stall_monitor.stall_s:g} s of sim time but it measures (v {measured[0]:.3f}, "
                f"w {measured[1]:.3f}); wheel speeds {wheels} rad/s; re-sending the wheel command")
            self.sim.set_base_velocity(*self.limiter.current)
        return "base stalled: commanded but not moving" if self.stall_monitor.reported else ""

    # ================================================================== watchdog / rejection
    def _poll_watchdog(self, now: float) -> None:
        for channel in self.watchdog.poll(now):
            self.get_logger().warning(
                f"no '{channel}' command for {self.watchdog.timeout_s:g} s: going to the safe state")
            if channel == "base":
                self.limiter.stop()
            elif channel in ("arm", "plate"):
                js = self.sim.joint_state()
                names, positions = hold_targets(js.names, js.position.tolist(), self.hold_joints)
                if names:
                    self.sim.set_joint_targets(names, positions)
            elif channel == "cart":
                self.sim.set_cart_force(0.0)

    def _reject(self, channel: str, exc: Exception) -> None:
        kind = getattr(exc, "kind", "backend_error")
        if self.rejects.record(channel, kind, time.monotonic()):
            self.get_logger().warning(f"rejected {channel} command ({kind}): {exc} "
                                      f"[warned at most once per {WARN_PERIOD_S:g} s per kind]")

    def _command(self, channel: str, watchdog_channel: Optional[str], apply: Callable[[], None]) -> None:
        try:
            apply()
        except (CommandRejected, ValueError, NotImplementedError) as exc:
            self._reject(channel, exc)
            return
        self.commands_received += 1
        if watchdog_channel is not None:
            self.watchdog.feed(watchdog_channel, self._cmd_now())

    def _clip_count(self, channel: str) -> None:
        self.clipped[channel] = self.clipped.get(channel, 0) + 1

    # ================================================================== command callbacks
    def _on_cmd_vel(self, msg) -> None:
        t = msg.twist if self.cmd_vel_stamped else msg

        def apply():
            v, w = validate_twist(t.linear.x, t.angular.z, (t.linear.y, t.linear.z, t.angular.x, t.angular.y))
            if self.limiter.set_target(v, w):
                self._clip_count("cmd_vel")
        self._command("cmd_vel", "base", apply)

    def _on_joint_targets(self, msg: JointState) -> None:
        def apply():
            names, positions = validate_joint_targets(msg.name, msg.position, self.controllable)
            self.sim.set_joint_targets(names, positions)
        self._command("joint_targets", "arm", apply)

    def _on_ee_delta(self, msg: Vector3) -> None:
        def apply():
            delta, clipped = clip_ee_delta(msg.x, msg.y, msg.z, self.max_ee_step)
            if clipped:
                self._clip_count("ee_delta")
            self.sim.set_end_effector_delta(*delta)
        self._command("ee_delta", "arm", apply)

    def _on_gripper(self, msg: Bool) -> None:
        want_open = bool(msg.data)

        def apply():
            self.sim.set_gripper(want_open)
            if want_open != self.gripper_open:   # a change of state is worth a line in the log
                self.gripper_open = want_open
                self.get_logger().info(f"gripper: {'open' if want_open else 'close'}")

        self._command("gripper", None, apply)

    def _on_cart_force(self, msg: Float64) -> None:
        def apply():
            f = validate_scalar(msg.data, -self.cart_max_force, self.cart_max_force, "cart force (N)")
            self.sim.set_cart_force(f)
        self._command("cart_force", "cart", apply)

    def _on_plate_angles(self, msg: Vector3) -> None:
        def apply():
            if not math.isfinite(msg.z):
                raise CommandRejected("non_finite", f"plate angle command has z = {msg.z}")
            (bp, br) = self.plate_bounds
            pitch = validate_scalar(msg.x, bp.lower, bp.upper, "plate pitch (rad)")
            roll = validate_scalar(msg.y, br.lower, br.upper, "plate roll (rad)")
            self.sim.set_plate_angles(pitch, roll)
        self._command("plate_angles", "plate", apply)

    # ================================================================== services
    def _on_reset(self, request: ResetSim.Request, response: ResetSim.Response) -> ResetSim.Response:
        scene = request.scene or self.scene
        if scene not in self._scene_names():
            response.success = False
            response.message = f"unknown scene '{scene}'; valid scenes: {', '.join(self._scene_names())}"
            return response
        names, poses = list(request.object_names), list(request.object_poses)
        if len(names) != len(poses):
            response.success = False
            response.message = f"object_names ({len(names)}) and object_poses ({len(poses)}) differ in length"
            return response
        if self.continuous_clock:  # the next episode's time starts one period after this one's
            self.clock_offset += self.sim.sim_time + self.period
        try:
            if scene != self.scene:
                self.sim.load_scene(scene, seed=int(request.seed))
                self._setup_scene(scene)
            else:
                self.sim.reset(int(request.seed))
            from sim_bridges.contract import Pose as SimPose

            for name, pose in zip(names, poses):  # evaluation layouts: after the seeded placement
                o = pose.orientation
                self.sim.set_object_pose(name, SimPose([pose.position.x, pose.position.y, pose.position.z],
                                                       [o.x, o.y, o.z, o.w]))
        except ValueError as exc:  # e.g. a negative seed, an unknown object, a non-finite pose
            self.sim.reset(int(request.seed)) if scene == self.scene else None
            self._after_reset()
            response.success, response.message = False, f"reset failed: {exc}"
            return response
        self._after_reset()
        response.success = True
        moved = f", moved {', '.join(names)}" if names else ""
        response.message = f"scene '{scene}' reset with seed {request.seed}{moved}"
        response.sim_time = self._stamp()
        return response

    def _on_step(self, request: SimStep.Request, response: SimStep.Response) -> SimStep.Response:
        if self.mode != "lockstep":
            response.success = False
            response.message = f"the step service only works in lockstep mode (mode is '{self.mode}')"
            return response
        if self.paused:
            response.success, response.message = False, "paused (call ~/pause with data=false)"
            return response
        if request.steps > 0:  # steps = 0: advance nothing, just report (lockstep clients sync on the counter)
            self._run_steps(int(request.steps), publish_inside=self.camera_in_lockstep)
            self._publish_due()
        self.step_calls += 1
        self.meters["step_calls"].tick()
        response.success = True
        response.commands_received = self.commands_received
        response.sim_time = self._stamp()
        if self.sim.joint_names:
            response.joint_state = self._joint_state_msg()
        if self.has_base:
            odom, cov = self._base_odometry()
            response.odom = convert.odometry_msg(odom, response.sim_time, cov)
        return response

    def _on_pause(self, request: SetBool.Request, response: SetBool.Response) -> SetBool.Response:
        was = self.paused
        self.paused = bool(request.data)
        if was and not self.paused:  # realtime: do not catch up on the paused time
            self._rt_anchor, self._rt_done = time.monotonic(), 0
        response.success = True
        response.message = "paused" if self.paused else "running"
        return response

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
