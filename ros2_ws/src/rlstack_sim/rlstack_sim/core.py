"""The sim bridge's command handling, stepping and odometry bookkeeping (pure Python, no rclpy).

What :mod:`rlstack_sim.bridge_node` decides, without ROS, so that it can be unit-tested on a real
backend:

* :class:`CommandHandler`: a command's values -> validation, limits, clip/reject counters, the
  backend call, the watchdog and its safe states, the base-stall check. The scene's command
  channels and joint bounds come from :meth:`CommandHandler.configure`.
* :class:`Stepper`: control steps, pause, the realtime catch-up, and when each published stream
  (clock, state, ground truth, camera) is due.
* :class:`BaseOdometry`: the base pose as /odom gives it: the truth, or wheel odometry with drift.
* :func:`make_backend` (a ConfigError for a scene the backend lacks), :func:`check_reset` and
  :func:`apply_reset` (the reset service), :func:`diagnostic_values`.

Log lines go through the ``info``/``warning`` callables the node passes (its logger's methods).
"""

from __future__ import annotations

import math
import time
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from rlstack_common.spin import Deadline
from rlstack_sim.commands import (
    BaseStallMonitor,
    CommandRejected,
    GripperStallMonitor,
    JointBounds,
    RejectLog,
    VelocityLimiter,
    Watchdog,
    clip_ee_delta,
    hold_targets,
    validate_joint_targets,
    validate_scalar,
    validate_twist,
)
from rlstack_sim.config import ConfigError, RateMeter

__all__ = ["BaseOdometry", "CommandHandler", "FAST_SLICE_S", "MAX_CATCHUP_STEPS", "REQUEST_COMMANDS", "STREAMS",
           "Stepper", "WARN_PERIOD_S", "apply_request_commands", "apply_reset", "check_object_lists", "check_reset",
           "diagnostic_values", "make_backend", "plan_request_commands"]

# Wall-clock budget of one fast-mode timer callback: commands and services are served between slices.
FAST_SLICE_S = 0.02
# Realtime: a tick that finds itself more than this many control steps behind skips the rest
# (counted as an overrun) instead of trying to catch up forever.
MAX_CATCHUP_STEPS = 12
WARN_PERIOD_S = 5.0
#: the published streams, in the order they are published when due together
STREAMS = ("clock", "state", "ground_truth", "camera")

Log = Callable[[str], None]


# =========================================================================== commands
class CommandHandler:
    """Command values -> the backend, with validation, limits, counters and the watchdog.

    :param sim: the backend (sim_bridges contract)
    :param limiter: the base's speed/acceleration limits
    :param timeout_s: command watchdog timeout (0: off)
    :param max_ee_step: longest end-effector delta per message, m
    :param clock: the watchdog's clock (wall time in realtime mode, sim time otherwise)
    """

    def __init__(self, sim, limiter: VelocityLimiter, timeout_s: float, max_ee_step: float,
                 clock: Callable[[], float], info: Log, warning: Log) -> None:
        self.sim, self.limiter, self.max_ee_step = sim, limiter, max_ee_step
        self._clock, self._info, self._warning = clock, info, warning
        self.stall_monitor = BaseStallMonitor()
        self.gripper_monitor = GripperStallMonitor()
        self.finger_joints: List[str] = []
        self.finger_open_width = 0.0   # both fingers fully open, m
        self.watchdog = Watchdog(timeout_s)
        self.rejects = RejectLog(WARN_PERIOD_S)
        self.clipped: Dict[str, int] = {}
        self.commands_received = 0   # accepted command messages since the last reset (SimStep answer)
        self.gripper_open: Optional[bool] = None   # last gripper command (None: none yet)
        self.has_base = False
        self.controllable: Dict[str, JointBounds] = {}
        self.hold_joints: Dict[str, JointBounds] = {}
        self.cart_max_force = 0.0
        self.plate_bounds: List[JointBounds] = []
        self.channels: List[str] = []   # the scene's command channels (configure)

    def configure(self, spec, joint_limits, capabilities, capability) -> List[str]:
        """A newly loaded scene: joint bounds from ``spec`` and the backend's ``joint_limits``, a fresh
        watchdog. Returns the command channels the scene takes, in subscription order (of
        ``cmd_vel``, ``joint_targets``, ``ee_delta``, ``ee_yaw``, ``gripper``, ``cart_force``, ``plate_angles``)."""
        C = capability
        self.has_base = C.BASE_VELOCITY in capabilities
        position_joints = [n for r in spec.robots for n in r.position_joints]
        fingers = {n for r in spec.robots if r.arm is not None for n in r.arm.finger_joints}
        self.finger_joints = [n for r in spec.robots if r.arm is not None for n in r.arm.finger_joints]
        self.finger_open_width = sum(r.arm.finger_open * len(r.arm.finger_joints) for r in spec.robots
                                     if r.arm is not None)
        self.gripper_monitor = GripperStallMonitor()
        self.controllable = {n: JointBounds(joint_limits[n].lower, joint_limits[n].upper) for n in position_joints}
        self.hold_joints = {n: b for n, b in self.controllable.items() if n not in fingers}
        self.cart_max_force = next((r.cart_max_force for r in spec.robots if r.cart_joint), 0.0)
        plate = next((r.plate_joints for r in spec.robots if r.plate_joints), None)
        self.plate_bounds = [self.controllable[j] for j in plate] if plate else []
        self.watchdog = Watchdog(self.watchdog.timeout_s)
        self.gripper_open = None
        channels = []
        for channel, cap, dog in (("cmd_vel", None, "base"), ("joint_targets", C.JOINT_POSITION_CONTROL, "arm"),
                                  ("ee_delta", C.END_EFFECTOR_DELTA, "arm"), ("ee_yaw", C.END_EFFECTOR_DELTA, "arm"),
                                  ("gripper", C.GRIPPER, None),
                                  ("cart_force", C.CART_FORCE, "cart"), ("plate_angles", C.PLATE_ANGLES, "plate")):
            if (self.has_base if cap is None else cap in capabilities):
                channels.append(channel)
                if dog is not None:
                    self.watchdog.add(dog)
        self.channels = channels
        return channels

    def reset(self) -> None:
        """After a simulator reset: base at rest, watchdog idle, no commands counted."""
        self.limiter.reset()
        self.watchdog.reset()
        self.commands_received = 0

    # ------------------------------------------------------------------ the command path
    def _reject(self, channel: str, exc: Exception) -> None:
        kind = getattr(exc, "kind", "backend_error")
        if self.rejects.record(channel, kind, time.monotonic()):
            self._warning(f"rejected {channel} command ({kind}): {exc} "
                          f"[warned at most once per {WARN_PERIOD_S:g} s per kind]")

    def _command(self, channel: str, watchdog_channel: Optional[str], apply: Callable[[], None]) -> None:
        try:
            apply()
        except (CommandRejected, ValueError, NotImplementedError) as exc:
            self._reject(channel, exc)
            return
        self.commands_received += 1
        if watchdog_channel is not None:
            self.watchdog.feed(watchdog_channel, self._clock())

    def _clip_count(self, channel: str) -> None:
        self.clipped[channel] = self.clipped.get(channel, 0) + 1

    def cmd_vel(self, linear_x: float, angular_z: float, others: Sequence[float]) -> None:
        def apply():
            v, w = validate_twist(linear_x, angular_z, others)
            if self.limiter.set_target(v, w):
                self._clip_count("cmd_vel")
        self._command("cmd_vel", "base", apply)

    def joint_targets(self, names: Sequence[str], positions: Sequence[float]) -> None:
        def apply():
            n, p = validate_joint_targets(names, positions, self.controllable)
            self.sim.set_joint_targets(n, p)
        self._command("joint_targets", "arm", apply)

    def ee_delta(self, x: float, y: float, z: float) -> None:
        def apply():
            delta, clipped = clip_ee_delta(x, y, z, self.max_ee_step)
            if clipped:
                self._clip_count("ee_delta")
            self.sim.set_end_effector_delta(*delta)
        self._command("ee_delta", "arm", apply)

    def ee_yaw(self, yaw: float) -> None:
        """Latched gripper yaw about the arm base's z (rad, |yaw| <= pi/2; see the contract)."""
        def apply():
            if not math.isfinite(yaw):
                raise CommandRejected("non_finite", f"gripper yaw command is {yaw}")
            if abs(yaw) > math.pi / 2:
                raise CommandRejected("out_of_range", f"gripper yaw {yaw:.3f} rad is beyond +-pi/2 "
                                      "(a two-finger gripper is symmetric under a half turn)")
            self.sim.set_end_effector_yaw(float(yaw))
        self._command("ee_yaw", "arm", apply)

    def gripper(self, want_open: bool) -> None:
        def apply():
            self.sim.set_gripper(want_open)
            if want_open != self.gripper_open:   # a change of state is worth a line in the log
                self.gripper_open = want_open
                self._info(f"gripper: {'open' if want_open else 'close'}")
        self._command("gripper", None, apply)

    def cart_force(self, force: float) -> None:
        def apply():
            f = validate_scalar(force, -self.cart_max_force, self.cart_max_force, "cart force (N)")
            self.sim.set_cart_force(f)
        self._command("cart_force", "cart", apply)

    def plate_angles(self, x: float, y: float, z: float) -> None:
        def apply():
            if not math.isfinite(z):
                raise CommandRejected("non_finite", f"plate angle command has z = {z}")
            (bp, br) = self.plate_bounds
            pitch = validate_scalar(x, bp.lower, bp.upper, "plate pitch (rad)")
            roll = validate_scalar(y, br.lower, br.upper, "plate roll (rad)")
            self.sim.set_plate_angles(pitch, roll)
        self._command("plate_angles", "plate", apply)

    # ------------------------------------------------------------------ safe states
    def poll_watchdog(self, now: float) -> None:
        """Channels whose commands went stale go to their safe state (base: stop; arm/plate: hold
        where they are; cart: no force)."""
        for channel in self.watchdog.poll(now):
            self._warning(f"no '{channel}' command for {self.watchdog.timeout_s:g} s: going to the safe state")
            if channel == "base":
                self.limiter.stop()
            elif channel in ("arm", "plate"):
                js = self.sim.joint_state()
                names, positions = hold_targets(js.names, js.position.tolist(), self.hold_joints)
                if names:
                    self.sim.set_joint_targets(names, positions)
            elif channel == "cart":
                self.sim.set_cart_force(0.0)

    def check_gripper_stall(self) -> str:
        """Fingers commanded open that stand still short of open (GripperStallMonitor): warn once
        per stall with the finger positions and efforts and what touches the fingers (simulator
        truth, for the log only). Returns the warning while the stall lasts."""
        if not self.finger_joints:
            return ""
        js = self.sim.joint_state()
        index = {n: i for i, n in enumerate(js.names)}
        if any(n not in index for n in self.finger_joints):
            return ""
        pos = [float(js.position[index[n]]) for n in self.finger_joints]
        if self.gripper_monitor.update(self.gripper_open, sum(pos), self.finger_open_width, self.sim.sim_time):
            effort = [round(float(js.effort[index[n]]), 1) for n in self.finger_joints]
            contacts = self.sim.gripper_contacts()
            self._warning(
                f"gripper stalled: commanded open for {self.gripper_monitor.stall_s:g} s of sim time but the fingers "
                f"stand at {[round(v, 4) for v in pos]} m with efforts {effort}; touching the fingers: "
                + ("; ".join(contacts) if contacts else "nothing the simulator reports"))
        return "gripper stalled: commanded open but not opening" if self.gripper_monitor.reported else ""

    def check_base_stall(self, paused: bool) -> str:
        """A base commanded to move that does not (BaseStallMonitor): warn with the evidence and
        re-send the latched wheel command. Returns the warning while the stall lasts."""
        if not self.has_base or paused:
            return ""
        tw = self.sim.base_odometry().twist
        measured = (float(tw.linear[0]), float(tw.angular[2]))
        if self.stall_monitor.update(self.limiter.current, measured, self.sim.sim_time):
            js = self.sim.joint_state()
            wheels = {n: round(float(v), 3) for n, v in zip(js.names, js.velocity) if "wheel" in n}
            self._warning(
                f"base stalled: applying (v {self.limiter.current[0]:.3f} m/s, w {self.limiter.current[1]:.3f} "
                f"rad/s) for {self.stall_monitor.stall_s:g} s of sim time but it measures (v {measured[0]:.3f}, "
                f"w {measured[1]:.3f}); wheel speeds {wheels} rad/s; re-sending the wheel command")
            self.sim.set_base_velocity(*self.limiter.current)
        return "base stalled: commanded but not moving" if self.stall_monitor.reported else ""


# =========================================================================== commands in a step request
#: commands a step request may carry (SimStep / SimStepBatch ``command_topics``): topic relative to the
#: bridge -> (CommandHandler channel, values per command)
REQUEST_COMMANDS: Dict[str, Tuple[str, int]] = {
    "cmd_vel": ("cmd_vel", 2), "arm/ee_delta": ("ee_delta", 3), "arm/ee_yaw": ("ee_yaw", 1),
    "arm/gripper": ("gripper", 1), "cartpole/force": ("cart_force", 1), "ball_plate/angles": ("plate_angles", 3),
}


def plan_request_commands(topics: Sequence[str], n_values: int, channels: Sequence[str],
                          copies: int = 1) -> Tuple[str, List[Tuple[str, int]]]:
    """Check a request's ``command_topics`` against the scene's ``channels`` and the number of
    ``command_values`` (``copies`` sets of them: one per env of a batch). Returns ('', plan) with
    plan = [(channel, values per command)], or (the reason it is refused, [])."""
    plan = []
    for topic in topics:
        key = topic.strip("/")
        if key not in REQUEST_COMMANDS:
            return (f"command topic '{topic}' cannot be carried in a step request (these can: "
                    f"{', '.join(sorted(REQUEST_COMMANDS))}); publish it on its topic instead"), []
        channel, arity = REQUEST_COMMANDS[key]
        if channel not in channels:
            return f"command topic '{topic}' is not one this scene takes (it takes: {', '.join(channels)})", []
        plan.append((channel, arity))
    per_copy = sum(a for _, a in plan)
    if n_values != per_copy * copies:
        return (f"command_values has {n_values} values, expected {per_copy * copies} "
                f"({copies} x {per_copy} for topics {list(topics)})"), []
    return "", plan


def apply_request_commands(handler: "CommandHandler", plan: Sequence[Tuple[str, int]], values: Sequence[float]) -> None:
    """Apply a planned request's values in order through ``handler``, exactly as the same messages on
    the command topics would be (validation, limits, counters, watchdog)."""
    i = 0
    for channel, arity in plan:
        v = [float(x) for x in values[i:i + arity]]
        i += arity
        if channel == "cmd_vel":
            handler.cmd_vel(v[0], v[1], (0.0, 0.0, 0.0, 0.0))
        elif channel == "gripper":
            handler.gripper(v[0] > 0)
        else:
            getattr(handler, channel)(*v)


# =========================================================================== stepping
class Stepper:
    """Control steps, pause, the realtime catch-up, and when each stream is due.

    :param mode: ``realtime`` (wall-clock paced), ``fast`` or ``lockstep`` (only on the step service)
    :param period: control period, s of sim time
    :param k_state: publish /joint_states, /odom, /tf every ``k_state`` control steps (None: off)
    :param k_gt: ground truth every ``k_gt`` control steps (None: off)
    :param k_cam: cameras every ``k_cam`` control steps (None: off)
    :param camera_in_lockstep: lockstep mode renders cameras too
    """

    def __init__(self, sim, commands: CommandHandler, mode: str, period: float, k_state: Optional[int],
                 k_gt: Optional[int], k_cam: Optional[int], camera_in_lockstep: bool) -> None:
        self.sim, self.commands, self.mode, self.period = sim, commands, mode, period
        self.k_state, self.k_gt, self.k_cam, self.camera_in_lockstep = k_state, k_gt, k_cam, camera_in_lockstep
        self.paused = False
        self.overruns = 0
        self.steps = 0         # control steps since the last reset
        self.steps_total = 0   # control steps since start (not reset): realtime factor, caches
        self.step_meter = RateMeter()
        self._last_wall: Optional[float] = None
        self._last_steps = 0
        self.reset()

    def reset(self) -> None:
        self.steps = 0
        self.next_due = {s: 0 for s in STREAMS}
        self.rt_anchor = time.monotonic()
        self.rt_done = 0

    def realtime_factor(self, now: float) -> float:
        """Sim time per wall time since the previous call (0.0 on the first)."""
        rtf = 0.0
        if self._last_wall is not None and now > self._last_wall:
            rtf = (self.steps_total - self._last_steps) * self.period / (now - self._last_wall)
        self._last_wall, self._last_steps = now, self.steps_total
        return rtf

    def set_paused(self, paused: bool) -> str:
        was, self.paused = self.paused, bool(paused)
        if was and not self.paused:  # realtime: do not catch up on the paused time
            self.rt_anchor, self.rt_done = time.monotonic(), 0
        return "paused" if self.paused else "running"

    def stream_period(self, stream: str) -> Optional[int]:
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

    def steps_to_next_publication(self) -> int:
        gaps = [self.next_due[s] - self.steps for s in self.next_due if self.stream_period(s)]
        return max(1, min(gaps)) if gaps else 1 << 30

    def due(self, force: bool = False) -> List[str]:
        """The streams to publish now (in :data:`STREAMS` order); each is then due again at its
        next multiple of its period."""
        out = []
        for stream in STREAMS:
            k = self.stream_period(stream)
            if k and (force or self.steps >= self.next_due[stream]):
                out.append(stream)
                self.next_due[stream] = (self.steps // k + 1) * k
        return out

    def run(self, n: int, publish_due: Callable[[], None], publish_inside: bool = False) -> None:
        """Advance ``n`` control steps: acceleration ramp per step, watchdog deadlines between
        batches (sim-time modes), publications inside the run when ``publish_inside``."""
        sim, cmd, sim_clock = self.sim, self.commands, self.mode != "realtime"
        while n > 0:
            if sim_clock:
                cmd.poll_watchdog(sim.sim_time)
            batch = n
            if cmd.has_base and not cmd.limiter.settled:
                v, w = cmd.limiter.update(self.period)
                sim.set_base_velocity(v, w)
                batch = 1
            elif sim_clock and batch > 1 and (deadline := cmd.watchdog.deadline()) is not None:
                batch = min(batch, max(1, math.ceil((deadline - sim.sim_time) / self.period - 1e-9)))
            if publish_inside:
                batch = min(batch, self.steps_to_next_publication())
            sim.step(batch)
            n -= batch
            self.steps += batch
            self.steps_total += batch
            self.step_meter.tick(batch)
            if publish_inside:
                publish_due()
        if sim_clock:
            cmd.poll_watchdog(sim.sim_time)

    def realtime_tick(self, publish_due: Callable[[], None]) -> None:
        """Run the control steps the wall clock says are due (at most MAX_CATCHUP_STEPS)."""
        now = time.monotonic()
        self.commands.poll_watchdog(now)
        if self.paused:
            return
        behind = int((now - self.rt_anchor) / self.period) - self.rt_done
        if behind <= 0:
            return
        if behind > MAX_CATCHUP_STEPS:  # e.g. the process was stopped: drop the backlog
            self.overruns += 1
            self.rt_anchor, self.rt_done, behind = now - self.period, 0, 1
        self.run(behind, publish_due)
        self.rt_done += behind
        publish_due()

    def fast_tick(self, publish_due: Callable[[], None]) -> None:
        """Run steps for FAST_SLICE_S of wall time, publishing inside."""
        if self.paused:
            return
        deadline = Deadline(FAST_SLICE_S)
        while not deadline.expired():
            self.run(min(self.steps_to_next_publication(), 240), publish_due, publish_inside=True)


# =========================================================================== odometry
class BaseOdometry:
    """The base pose /odom publishes: the truth, or (``enabled``) wheel odometry integrated from
    the wheel angles with ``errors`` (drift; sim_bridges.wheel_odometry), once per control step.

    :param seed: the wheel odometry's noise seed; each reset adds one (a fresh stream per episode)
    """

    def __init__(self, sim, enabled: bool, errors, seed: int) -> None:
        self.sim, self.enabled, self.errors, self.seed = sim, enabled, errors, seed
        self.resets = 0
        self.wheel = None   # (WheelOdometry, left wheel joint, right wheel joint)
        self._cache = None
        self._z = 0.0

    def configure(self, spec, has_base: bool) -> bool:
        """A newly loaded scene; True when wheel odometry runs (then ground truth is in 'map')."""
        self.wheel = None
        if has_base and self.enabled:
            from sim_bridges.wheel_odometry import WheelOdometry
            dd = next(r.diff_drive for r in spec.robots if r.diff_drive is not None)
            self.wheel = (WheelOdometry(dd.wheel_radius, dd.track_width, self.errors),
                          dd.left_wheel_joint, dd.right_wheel_joint)
        return self.wheel is not None

    def reset(self, has_base: bool) -> None:
        """After a simulator reset: odom starts where the robot is (= the world)."""
        self._cache = None
        if has_base and self.wheel is not None:
            from sim_bridges.geometry import yaw_from_quat
            pose = self.sim.base_odometry().pose
            self._z = float(pose.position[2])
            self.wheel[0].reset((float(pose.position[0]), float(pose.position[1]), yaw_from_quat(pose.orientation)),
                                seed=self.seed + self.resets)
            self.resets += 1

    def get(self, step: int):
        """(Odometry, covariance 6x6 or None) at control step ``step`` (steps since start)."""
        if self.wheel is None:
            return self.sim.base_odometry(), None
        if self._cache is None or self._cache[0] != step:
            from sim_bridges.contract import Odometry as SimOdometry
            from sim_bridges.contract import Pose as SimPose
            from sim_bridges.contract import Twist as SimTwist
            odo, left, right = self.wheel
            js = self.sim.joint_state()
            true_yaw = None
            if odo.errors.gyro:   # the simulated gyro integrates the base's true turn
                from sim_bridges.geometry import yaw_from_quat
                true_yaw = yaw_from_quat(self.sim.base_odometry().pose.orientation)
            x, y, yaw = odo.update(js.position[js.names.index(left)], js.position[js.names.index(right)],
                                   self.sim.sim_time, true_yaw)
            msg = SimOdometry(stamp=self.sim.sim_time,
                              pose=SimPose([x, y, self._z], [0.0, 0.0, math.sin(yaw / 2), math.cos(yaw / 2)]),
                              twist=SimTwist([odo.v, 0.0, 0.0], [0.0, 0.0, odo.w]))
            self._cache = (step, msg, odo.covariance6())
        return self._cache[1], self._cache[2]


# =========================================================================== backend, reset, diagnostics
def make_backend(backend: str, scene: str, **kwargs):
    """The backend, or a ConfigError (one line, exit 2) for a scene it lacks or an engine not installed."""
    from sim_bridges import BackendUnavailable, backend_scenes
    from sim_bridges import make_backend as make

    if scene not in backend_scenes(backend):
        raise ConfigError(f"backend '{backend}' does not build scene '{scene}' (it builds: "
                          f"{', '.join(backend_scenes(backend))}); use backend:=pybullet for it")
    try:
        return make(backend, **kwargs)
    except (BackendUnavailable, ValueError) as exc:
        raise ConfigError(str(exc)) from None


def check_reset(scene: str, scenes: Sequence[str], n_names: int, n_poses: int) -> str:
    """Why a reset request is refused ('' when it is not)."""
    if scene not in scenes:
        return f"unknown scene '{scene}'; valid scenes: {', '.join(scenes)}"
    return check_object_lists(n_names, n_poses)


def check_object_lists(n_names: int, n_poses: int) -> str:
    """Why a request's ``object_names`` and ``object_poses`` do not pair up ('' when they do): the
    reset's and ``~/move_objects``'s check."""
    if n_names != n_poses:
        return f"object_names ({n_names}) and object_poses ({n_poses}) differ in length"
    return ""


def apply_reset(sim, scene: str, current_scene: Callable[[], str], seed: int,
                objects: Sequence[Tuple[str, Sequence[float], Sequence[float]]],
                load_scene: Callable[[str, int], None]) -> str:
    """The backend side of a reset: ``load_scene(scene, seed)`` for another scene, else a seeded
    reset; then the evaluation layout's ``(name, position, quaternion xyzw)`` objects. Returns ''
    or the reason it failed (a negative seed, an unknown object, a non-finite pose); after a
    failure in the scene now loaded (``current_scene()``) it is reset again with the seed."""
    try:
        if scene != current_scene():
            load_scene(scene, seed)
        else:
            sim.reset(seed)
        from sim_bridges.contract import Pose as SimPose

        for name, position, quaternion in objects:  # evaluation layouts: after the seeded placement
            sim.set_object_pose(name, SimPose(list(position), list(quaternion)))
    except ValueError as exc:
        if scene == current_scene():
            sim.reset(seed)
        return f"reset failed: {exc}"
    return ""


def apply_moves(sim, objects: Sequence[Tuple[str, Sequence[float], Sequence[float]]]) -> str:
    """Place ``(name, position, quaternion xyzw)`` objects now, at rest, without a reset (the
    bridge's ``~/move_objects``: evaluators, tests, fault injection). All or nothing: every name
    and pose is checked first. Returns '' or why nothing moved."""
    from sim_bridges.contract import Pose as SimPose

    known = set(sim.ground_truth())
    for name, position, quaternion in objects:
        if name not in known:
            return f"unknown object '{name}'; objects: {', '.join(sorted(known))}"
        values = [float(v) for v in (*position, *quaternion)]
        if not all(math.isfinite(v) for v in values):
            return f"pose of '{name}' is not finite: {values}"
        if abs(math.sqrt(sum(v * v for v in quaternion)) - 1.0) > 1e-3:
            return f"orientation of '{name}' is not a unit quaternion: {list(quaternion)}"
    for name, position, quaternion in objects:
        sim.set_object_pose(name, SimPose(list(position), list(quaternion)))
    return ""


def diagnostic_values(stepper: Stepper, commands: CommandHandler, scene: str, control_rate: float,
                      meters: Dict[str, RateMeter], camera_meters: Dict[str, RateMeter],
                      now: float) -> Tuple[bool, str, Dict[str, str]]:
    """(warn, message, key -> value) of the bridge's diagnostics status (also checks for a base stall)."""
    rtf = stepper.realtime_factor(now)
    values = {
        "scene": scene, "mode": stepper.mode, "paused": str(stepper.paused).lower(),
        "sim_time_s": f"{stepper.sim.sim_time:.4f}",
        "control_rate_hz": f"{control_rate:g}",
        "achieved_control_steps_per_s": f"{stepper.step_meter.sample(now):.1f}",
        "realtime_factor": f"{rtf:.3f}",
        "state_publish_hz": f"{meters['state'].sample(now):.1f}",
        "ground_truth_publish_hz": f"{meters['ground_truth'].sample(now):.1f}",
        "step_service_calls_per_s": f"{meters['step_calls'].sample(now):.1f}",
        "realtime_overruns": str(stepper.overruns),
        "watchdog": commands.watchdog.summary(),
        "watchdog_timeouts": str(commands.watchdog.timeouts),
        "rejected_total": str(commands.rejects.total),
    }
    for cam, meter in camera_meters.items():
        values[f"camera_hz.{cam}"] = f"{meter.sample(now):.1f}"
    for key, count in sorted(commands.rejects.counts.items()):
        values[f"rejected.{key}"] = str(count)
    for key, count in sorted(commands.clipped.items()):
        values[f"clipped.{key}"] = str(count)
    warn, message = False, f"{stepper.mode}, rtf {rtf:.2f}"
    if stepper.mode == "realtime" and not stepper.paused and 0 < rtf < 0.9:
        warn, message = True, f"realtime factor {rtf:.2f} < 0.9"
    stall = commands.check_base_stall(stepper.paused)
    values["base_stalls"] = str(commands.stall_monitor.stalls)
    if stall:
        warn, message = True, stall
    gripper = commands.check_gripper_stall()
    values["gripper_stalls"] = str(commands.gripper_monitor.stalls)
    if gripper:
        warn, message = True, gripper
    return warn, message, values
