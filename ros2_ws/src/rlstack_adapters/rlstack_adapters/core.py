"""Pure cores of the adapters (no rclpy): validation, conversion, limits, watchdog, counters.

ArmAdapterCore
    The policy node and the mission command the arm with end-effector *steps*: a
    geometry_msgs/Vector3 on /arm/ee_delta, the grasp point's displacement in metres in the
    arm base frame, one per control period (20 Hz for the lift bundles). A real arm's standard
    cartesian interfaces take a *velocity* (MoveIt Servo's TwistStamped ``delta_twist_cmds``,
    which does the IK and feeds a joint trajectory controller; a cartesian velocity controller).
    The step becomes ``v = step / step_period_s``, clipped to ``max_linear_speed``; angular
    velocity turns the gripper to the yaw asked on /arm/ee_yaw (std_msgs/Float64, rad about the
    arm base's z, relative to the straight-down pose; the fetch mission squares the fingers to a
    cube this way): open loop, ``angular.z`` at most ``max_angular_speed`` until the yaw the core has
    commanded since start-up (the gripper assumed straight then) reaches the target, carried on
    the steps or, between steps, on the watchdog's ticks. A step that stops coming
    (``command_timeout_s``) gives one zero twist; an asserted e-stop drops every step and
    gives a zero twist.

GripperCore
    /arm/gripper (std_msgs/Bool: true open, false close) is a latched state, re-published
    every control step by the policy. A gripper driver takes *goals* (control_msgs
    GripperCommand: position + max_effort; or a position controller's command array), so the
    core turns the state into a goal only when it changes, or when the same state is asked
    for again after ``resend_period_s`` (a goal the driver aborted is retried).

TwistStamperCore
    /cmd_vel (geometry_msgs/Twist, what nav_controller and the mission publish) ->
    TwistStamped, which ros2_control's diff_drive_controller takes on ``~/cmd_vel`` since
    Jazzy. Only finite commands pass.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field


def _finite(*values: float) -> bool:
    return all(math.isfinite(v) for v in values)


# ---------------------------------------------------------------------------- arm
@dataclass(frozen=True)
class ArmAdapterConfig:
    step_period_s: float = 0.05       # the policy's control period: one step per period (20 Hz)
    max_ee_step: float = 0.05         # longer steps are scaled down to this (as the sim bridge), m
    max_linear_speed: float = 0.25    # the twist's speed limit, m/s
    command_timeout_s: float = 0.15   # no step for this long: one zero twist, s
    max_angular_speed: float = 1.0    # gripper yaw rate of an /arm/ee_yaw turn, rad/s

    def __post_init__(self) -> None:
        for name in ("step_period_s", "max_ee_step", "max_linear_speed", "command_timeout_s", "max_angular_speed"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0.0):
                raise ValueError(f"{name} must be a positive finite number, got {value!r}")


@dataclass
class ArmCommand:
    """A cartesian velocity for the arm's controller, m/s, in the arm base frame."""

    linear: tuple[float, float, float]
    reason: str  # "step" | "turn" | "turned" | "timeout" | "estop"
    angular_z: float = 0.0   # gripper yaw rate about the arm base's z, rad/s


@dataclass
class ArmAdapterCore:
    config: ArmAdapterConfig = field(default_factory=ArmAdapterConfig)
    rejected: dict[str, int] = field(default_factory=dict)
    clipped_steps: int = 0
    clipped_speeds: int = 0
    timeouts: int = 0
    steps: int = 0
    estop: bool = False
    _last_step_time: float | None = None
    _moving: bool = False
    yaw_target: float = 0.0       # the gripper yaw asked on /arm/ee_yaw, rad
    yaw_commanded: float = 0.0    # the yaw this core's twists have turned the gripper to (open loop), rad
    _last_tick_time: float | None = None
    _turning: bool = False        # a turn is going out on the ticks

    def on_ee_yaw(self, yaw: float) -> bool:
        """A gripper yaw (rad, |yaw| <= pi/2) to turn to; False (counted) if rejected."""
        if not _finite(yaw):
            self._reject("non_finite_yaw")
            return False
        if abs(yaw) > math.pi / 2:
            self._reject("yaw_out_of_range")
            return False
        self.yaw_target = float(yaw)
        return True

    def _yaw_rate(self, dt: float) -> float:
        """Angular velocity for the next ``dt`` s towards the target; books the turn as commanded."""
        remaining = self.yaw_target - self.yaw_commanded
        if self.estop or abs(remaining) < 1e-6 or dt <= 0.0:
            return 0.0
        w = max(-self.config.max_angular_speed, min(self.config.max_angular_speed, remaining / dt))
        self.yaw_commanded += w * dt
        return w

    def on_ee_delta(self, x: float, y: float, z: float, now: float) -> ArmCommand | None:
        """A step arrived at ``now`` (s, monotonic): the twist to send, or None if rejected."""
        if not _finite(x, y, z):
            self._reject("non_finite")
            return None
        if self.estop:
            self._reject("estop")
            return ArmCommand((0.0, 0.0, 0.0), "estop")
        cfg = self.config
        length = math.sqrt(x * x + y * y + z * z)
        if length > cfg.max_ee_step:
            k = cfg.max_ee_step / length
            x, y, z = x * k, y * k, z * k
            self.clipped_steps += 1
        vx, vy, vz = x / cfg.step_period_s, y / cfg.step_period_s, z / cfg.step_period_s
        speed = math.sqrt(vx * vx + vy * vy + vz * vz)
        if speed > cfg.max_linear_speed:
            k = cfg.max_linear_speed / speed
            vx, vy, vz = vx * k, vy * k, vz * k
            self.clipped_speeds += 1
        self.steps += 1
        self._last_step_time = now
        wz = self._yaw_rate(cfg.step_period_s)   # a turn rides on the steps while they come
        self._turning = False
        self._moving = speed > 0.0 or wz != 0.0
        return ArmCommand((vx, vy, vz), "step", wz)

    def on_tick(self, now: float) -> ArmCommand | None:
        """Watchdog: one zero twist when steps stop while the arm was commanded to move. Between
        steps (none for a step period) a yaw still to turn goes out on the ticks, then one zero
        twist ("turned") when it is done."""
        last_tick, self._last_tick_time = self._last_tick_time, now
        stepping = self._last_step_time is not None and now - self._last_step_time <= self.config.step_period_s
        if not stepping and not self.estop:
            if abs(self.yaw_target - self.yaw_commanded) > 1e-6:
                dt = min(now - last_tick, self.config.step_period_s) if last_tick is not None else 0.0
                wz = self._yaw_rate(dt)
                if wz != 0.0:
                    self._turning = True
                    return ArmCommand((0.0, 0.0, 0.0), "turn", wz)
            elif self._turning:
                self._turning = False
                return ArmCommand((0.0, 0.0, 0.0), "turned")
        if self._moving and self._last_step_time is not None \
                and now - self._last_step_time > self.config.command_timeout_s:
            self._moving = False
            self.timeouts += 1
            return ArmCommand((0.0, 0.0, 0.0), "timeout")
        return None

    def set_estop(self, asserted: bool) -> ArmCommand | None:
        """E-stop input (std_msgs/Bool): asserting it stops the arm at once."""
        was = self.estop
        self.estop = bool(asserted)
        if self.estop and not was:
            self._moving = False
            return ArmCommand((0.0, 0.0, 0.0), "estop")
        return None

    def _reject(self, kind: str) -> None:
        self.rejected[kind] = self.rejected.get(kind, 0) + 1


# ---------------------------------------------------------------------------- gripper
@dataclass(frozen=True)
class GripperConfig:
    open_position: float = 0.04      # the driver's position for "open" (Franka Hand: 0.04 m per finger)
    closed_position: float = 0.0     # ... for "close": the fingers stop on the object
    max_effort: float = 20.0         # grasp force for a close goal, N (0: the driver's default)
    resend_period_s: float = 1.0     # the same state asked again after this long is re-sent (0: never)

    def __post_init__(self) -> None:
        for name in ("open_position", "closed_position", "max_effort", "resend_period_s"):
            value = getattr(self, name)
            if not math.isfinite(value):
                raise ValueError(f"{name} must be finite, got {value!r}")
        if self.max_effort < 0.0 or self.resend_period_s < 0.0:
            raise ValueError("max_effort and resend_period_s must be >= 0")


@dataclass
class GripperGoal:
    open: bool
    position: float
    max_effort: float


@dataclass
class GripperCore:
    config: GripperConfig = field(default_factory=GripperConfig)
    goals_sent: int = 0
    _state: bool | None = None
    _sent_at: float = 0.0

    def on_command(self, open_: bool, now: float) -> GripperGoal | None:
        """The gripper state asked for at ``now``: a goal to send, or None (nothing new)."""
        open_ = bool(open_)
        cfg = self.config
        if self._state is open_ and (cfg.resend_period_s == 0.0 or now - self._sent_at < cfg.resend_period_s):
            return None
        self._state = open_
        self._sent_at = now
        self.goals_sent += 1
        if open_:
            return GripperGoal(True, cfg.open_position, 0.0)
        return GripperGoal(False, cfg.closed_position, cfg.max_effort)

    @property
    def state(self) -> str:
        return "unknown" if self._state is None else ("open" if self._state else "closed")


# ---------------------------------------------------------------------------- base
@dataclass
class TwistStamperCore:
    rejected: int = 0
    forwarded: int = 0

    def accept(self, linear: tuple[float, float, float], angular: tuple[float, float, float]) -> bool:
        """True when the command may be forwarded (every component finite)."""
        if not _finite(*linear, *angular):
            self.rejected += 1
            return False
        self.forwarded += 1
        return True
