"""Local controller for a differential-drive base: regulated pure pursuit (after Nav2's RPP,
Macenski et al. 2023), plus a precise final approach and rotation to the goal heading.

Each :meth:`RegulatedPurePursuit.compute` call takes the robot pose (map frame), the time step
and optionally the clearance (free distance between the robot's circle and the nearest obstacle)
and returns a ``(v, w)`` command with the controller's state:

* ``ROTATING``: the carrot is more than ``rotate_to_heading_min_angle`` off the heading (at the
  start, after a replan, or when the goal ended up behind): brake, then turn in place until the
  error is under half that angle (hysteresis), decelerating into the target angle.
* ``FOLLOWING``: pure pursuit on a carrot ``lookahead`` metres ahead along the path
  (``lookahead = clamp(|v| * lookahead_time, min, max)``); curvature ``k = 2 y / L^2``.
  The speed is regulated down on tight curves (radius below ``regulated_linear_scaling_min_radius``)
  and near obstacles (clearance below ``proximity_scaling_dist``), not below
  ``regulated_linear_scaling_min_speed``.
* ``APPROACHING``: within ``approach_velocity_scaling_dist`` of the goal the speed scales with the
  remaining distance (not below ``min_approach_linear_velocity``) and is capped so the base can
  stop at the goal with ``max_linear_decel``. Near the goal the carrot slides onto the extension of
  the last path segment, so the curvature stays finite.
* ``FINAL_ROTATING``: within ``goal_precision * xy_tolerance`` of the goal position (or within
  ``xy_tolerance`` with the goal abeam or behind, where driving on would only move away): stop and turn
  in place to the goal heading (to ``goal_precision * yaw_tolerance``). If the position estimate
  drifts out of ``final_rotation_hold * xy_tolerance`` meanwhile, approach again.
* Limits: ``|v| <= desired_linear_vel`` (forward only), ``|w| <= max_angular_vel`` (the speed is
  reduced with it so the curvature is kept), linear and angular acceleration limits per cycle
  against the previous command.

Pure Python + numpy; no rclpy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Sequence, Tuple

import numpy as np

IDLE, ROTATING, FOLLOWING, APPROACHING, FINAL_ROTATING, DONE = (
    "IDLE", "ROTATING", "FOLLOWING", "APPROACHING", "FINAL_ROTATING", "DONE")


def wrap_angle(a: float) -> float:
    return (a + math.pi) % (2.0 * math.pi) - math.pi


@dataclass
class ControllerParams:
    """Regulated pure pursuit parameters (SI units; names follow Nav2's RPP where one exists)."""

    desired_linear_vel: float = 0.5               # m/s, cruise speed (forward only)
    max_angular_vel: float = 1.5                  # rad/s, |w| limit while following
    lookahead_dist: float = 0.6                   # m, fixed lookahead (velocity scaling off)
    min_lookahead_dist: float = 0.3               # m
    max_lookahead_dist: float = 0.9               # m
    lookahead_time: float = 1.5                   # s, lookahead = |v| * lookahead_time (clamped)
    use_velocity_scaled_lookahead_dist: bool = True
    use_rotate_to_heading: bool = True
    rotate_to_heading_min_angle: float = 0.785    # rad, rotate in place above this heading error
    rotate_to_heading_angular_vel: float = 1.2    # rad/s, turning speed in place
    min_rotate_angular_vel: float = 0.1           # rad/s, slowest in-place turn (overcomes friction)
    max_linear_accel: float = 0.5                 # m/s^2
    max_linear_decel: float = 0.8                 # m/s^2
    max_angular_accel: float = 2.5                # rad/s^2
    use_regulated_linear_velocity_scaling: bool = True
    regulated_linear_scaling_min_radius: float = 0.9  # m, slow down on curves tighter than this
    regulated_linear_scaling_min_speed: float = 0.1   # m/s, floor of curvature/proximity slow-down
    use_proximity_speed_scaling: bool = True
    proximity_scaling_dist: float = 0.3           # m of clearance below which the speed scales down
    proximity_scaling_gain: float = 1.0           # v *= gain * clearance / proximity_scaling_dist
    approach_velocity_scaling_dist: float = 0.4   # m, slow down within this remaining distance
    min_approach_linear_velocity: float = 0.05    # m/s
    xy_goal_tolerance: float = 0.05               # m, default position tolerance
    yaw_goal_tolerance: float = 0.1               # rad, default heading tolerance
    goal_precision: float = 0.5                   # aim for this fraction of the tolerances (0..1]
    final_rotation_hold: float = 3.0              # in position: keep turning while within this many xy tolerances

    def validate(self) -> None:
        for name, value in vars(self).items():
            if isinstance(value, bool):
                continue
            if not math.isfinite(value) or value < 0:
                raise ValueError(f"controller parameter {name} must be finite and >= 0, got {value}")
        if self.min_lookahead_dist > self.max_lookahead_dist:
            raise ValueError("min_lookahead_dist > max_lookahead_dist")
        if not 0 < self.goal_precision <= 1:
            raise ValueError("goal_precision must be in (0, 1]")
        if self.final_rotation_hold < 1:
            raise ValueError("final_rotation_hold must be >= 1")
        for name in ("desired_linear_vel", "max_angular_vel", "rotate_to_heading_angular_vel",
                     "max_linear_accel", "max_linear_decel", "max_angular_accel", "min_lookahead_dist"):
            if getattr(self, name) <= 0:
                raise ValueError(f"controller parameter {name} must be > 0")


@dataclass
class ControlOutput:
    v: float
    w: float
    state: str
    distance_remaining: float      # m along the path (straight line once in the final rotation)
    distance_to_goal: float        # m, straight line
    yaw_error: float               # rad, goal heading - robot heading
    done: bool = False             # stopped within the tolerances
    carrot: Optional[Tuple[float, float]] = None
    curvature: float = 0.0


class RegulatedPurePursuit:
    """Stateful controller: call :meth:`set_path`, then :meth:`compute` every cycle."""

    def __init__(self, params: Optional[ControllerParams] = None) -> None:
        self.p = params or ControllerParams()
        self.p.validate()
        self.path = np.zeros((0, 2))
        self.goal_yaw = 0.0
        self.xy_tol = self.p.xy_goal_tolerance
        self.yaw_tol = self.p.yaw_goal_tolerance
        self.reset()

    def reset(self) -> None:
        self.v_prev = 0.0
        self.w_prev = 0.0
        self.state = IDLE
        self._idx = 0
        self._rotating = False
        self._at_position = False

    def set_path(self, path: Sequence[Sequence[float]], goal_yaw: float,
                 xy_tolerance: float = 0.0, yaw_tolerance: float = 0.0, keep_velocity: bool = True) -> None:
        """New path (map frame, (N, 2), ending at the goal). Tolerances <= 0 take the defaults."""
        path = np.asarray(path, float).reshape(-1, 2)
        if len(path) == 0 or not np.all(np.isfinite(path)) or not math.isfinite(goal_yaw):
            raise ValueError("path must be a non-empty finite (N, 2) array and goal_yaw finite")
        if len(path) == 1:
            path = np.vstack([path, path])
        self.path = path
        seg = np.hypot(*np.diff(path, axis=0).T)
        self._cum = np.concatenate([[0.0], np.cumsum(seg)])
        self.goal_yaw = float(goal_yaw)
        self.xy_tol = xy_tolerance if xy_tolerance > 0 else self.p.xy_goal_tolerance
        self.yaw_tol = yaw_tolerance if yaw_tolerance > 0 else self.p.yaw_goal_tolerance
        self._idx = 0
        self._rotating = False
        self._at_position = False
        if not keep_velocity:
            self.v_prev = self.w_prev = 0.0
        self.state = FOLLOWING

    @property
    def goal(self) -> np.ndarray:
        return self.path[-1]

    # ---------------------------------------------------------------------- geometry
    def _closest(self, x: float, y: float) -> Tuple[int, float]:
        """Closest path point, searched forward from the last one (never goes back)."""
        p = self.p
        horizon = self._cum[self._idx] + 2.0 * max(p.max_lookahead_dist, p.lookahead_dist) + 0.5
        end = int(np.searchsorted(self._cum, horizon, side="right"))
        end = max(end, self._idx + 1)
        seg = self.path[self._idx:end]
        d = np.hypot(seg[:, 0] - x, seg[:, 1] - y)
        k = int(np.argmin(d))
        self._idx += k
        return self._idx, float(d[k])

    def _carrot(self, idx: int, lookahead: float) -> np.ndarray:
        target = self._cum[idx] + lookahead
        total = self._cum[-1]
        if target <= total:
            j = int(np.searchsorted(self._cum, target, side="left"))
            j = min(max(j, 1), len(self.path) - 1)
            seg = self._cum[j] - self._cum[j - 1]
            t = 0.0 if seg <= 0 else (target - self._cum[j - 1]) / seg
            return self.path[j - 1] + t * (self.path[j] - self.path[j - 1])
        # beyond the end: slide along the extension of the last segment
        d = self.path[-1] - self.path[-2]
        n = float(np.hypot(*d))
        if n < 1e-9:
            d = np.array([math.cos(self.goal_yaw), math.sin(self.goal_yaw)])
        else:
            d = d / n
        return self.path[-1] + (target - total) * d

    # ---------------------------------------------------------------------- commands
    def _limit(self, v: float, w: float, dt: float) -> Tuple[float, float]:
        p = self.p
        v = min(max(v, self.v_prev - p.max_linear_decel * dt), self.v_prev + p.max_linear_accel * dt)
        w = min(max(w, self.w_prev - p.max_angular_accel * dt), self.w_prev + p.max_angular_accel * dt)
        return v, w

    def _rotate_cmd(self, err: float, dt: float, max_w: float) -> Tuple[float, float]:
        """Turn in place towards ``err`` (rad): brake the linear speed, decelerate into the target."""
        p = self.p
        w_mag = min(max_w, math.sqrt(2.0 * p.max_angular_accel * 0.8 * abs(err)))
        w_mag = max(w_mag, min(p.min_rotate_angular_vel, max_w))
        # never more than what turns exactly onto the target within one cycle
        if dt > 0:
            w_mag = min(w_mag, abs(err) / dt)
        v, w = self._limit(0.0, math.copysign(w_mag, err), dt)
        return v, w

    def _out(self, v: float, w: float, state: str, remaining: float, dg: float, yaw_err: float,
             done: bool = False, carrot=None, curvature: float = 0.0) -> ControlOutput:
        self.v_prev, self.w_prev, self.state = v, w, state
        return ControlOutput(v, w, state, remaining, dg, yaw_err, done,
                             None if carrot is None else (float(carrot[0]), float(carrot[1])), curvature)

    def compute(self, pose: Sequence[float], dt: float, clearance: Optional[float] = None) -> ControlOutput:
        """One control cycle. ``pose = (x, y, yaw)`` in the path's frame; ``dt`` in s (> 0);
        ``clearance``: m between the robot's circle and the nearest obstacle (None: unknown)."""
        p = self.p
        x, y, yaw = (float(v) for v in pose)
        dt = float(dt) if math.isfinite(dt) and dt > 0 else 1e-3
        if len(self.path) == 0 or self.state in (IDLE, DONE):
            v, w = self._limit(0.0, 0.0, dt)
            return self._out(v, w, self.state, 0.0, 0.0, 0.0, done=self.state == DONE)
        gx, gy = self.goal
        dg = math.hypot(gx - x, gy - y)
        yaw_err = wrap_angle(self.goal_yaw - yaw)
        c, s = math.cos(yaw), math.sin(yaw)
        goal_ahead = c * (gx - x) + s * (gy - y)

        # ------------------------------------------------------------- final rotation
        # in position: within the aimed precision, or within the tolerance with the goal abeam or
        # behind (driving on would only move away), or already there and the estimate still within
        # final_rotation_hold tolerances: turning in place does not move the robot, but a localiser's
        # corrections move its estimate by centimetres, and approaching again for each of them
        # would turn the robot back and forth without end (noisy depth)
        if (dg <= p.goal_precision * self.xy_tol
                or (self._at_position and dg <= p.final_rotation_hold * self.xy_tol)
                or (dg <= self.xy_tol and goal_ahead <= 0.2 * p.goal_precision * self.xy_tol)):
            self._at_position = True
            self._idx = len(self.path) - 1
            # a tolerance of pi or more takes any heading: no final turn (a place to look around from)
            if self.yaw_tol >= math.pi or abs(yaw_err) <= p.goal_precision * self.yaw_tol or (
                    abs(yaw_err) <= self.yaw_tol and abs(self.w_prev) < 1e-9):
                v, w = self._limit(0.0, 0.0, dt)
                stopped = abs(v) < 1e-9 and abs(w) < 1e-9
                return self._out(v, w, DONE if stopped else FINAL_ROTATING, dg, dg, yaw_err, done=stopped)
            v, w = self._rotate_cmd(yaw_err, dt, p.rotate_to_heading_angular_vel)
            return self._out(v, w, FINAL_ROTATING, dg, dg, yaw_err)
        self._at_position = False

        idx, d_path = self._closest(x, y)
        remaining = d_path + float(self._cum[-1] - self._cum[idx])

        if p.use_velocity_scaled_lookahead_dist:
            lookahead = min(max(abs(self.v_prev) * p.lookahead_time, p.min_lookahead_dist), p.max_lookahead_dist)
        else:
            lookahead = p.lookahead_dist
        near_goal = remaining <= p.approach_velocity_scaling_dist
        final_dir = self.path[-1] - self.path[-2]
        past_goal = float(final_dir[0] * (gx - x) + final_dir[1] * (gy - y)) < 0.0
        if near_goal and (past_goal or goal_ahead < 0.0):
            carrot = np.array([gx, gy])  # passed the goal: head straight back to it
        else:
            carrot = self._carrot(idx, lookahead)
        dx, dy = carrot[0] - x, carrot[1] - y
        lx, ly = c * dx + s * dy, -s * dx + c * dy
        heading_err = math.atan2(ly, lx)

        # ------------------------------------------------------------ rotate to path
        if p.use_rotate_to_heading:
            enter = p.rotate_to_heading_min_angle
            if abs(heading_err) > enter or (self._rotating and abs(heading_err) > 0.5 * enter):
                self._rotating = True
                v, w = self._rotate_cmd(heading_err, dt, p.rotate_to_heading_angular_vel)
                return self._out(v, w, ROTATING, remaining, dg, yaw_err, carrot=carrot)
        self._rotating = False

        # ---------------------------------------------------------- pure pursuit
        l2 = lx * lx + ly * ly
        curvature = 2.0 * ly / l2 if l2 > 1e-12 else 0.0
        v = p.desired_linear_vel
        if p.use_regulated_linear_velocity_scaling:
            v_reg = v
            if abs(curvature) > 1e-9:
                radius = 1.0 / abs(curvature)
                if radius < p.regulated_linear_scaling_min_radius:
                    v_reg *= radius / p.regulated_linear_scaling_min_radius
            if p.use_proximity_speed_scaling and clearance is not None and p.proximity_scaling_dist > 0:
                if clearance < p.proximity_scaling_dist:
                    v_reg *= min(1.0, p.proximity_scaling_gain * max(clearance, 0.0) / p.proximity_scaling_dist)
            v = max(v_reg, min(p.regulated_linear_scaling_min_speed, v))
        state = FOLLOWING
        if near_goal:
            state = APPROACHING
            v_app = p.desired_linear_vel * remaining / p.approach_velocity_scaling_dist
            v = min(v, max(v_app, p.min_approach_linear_velocity))
        # be able to stop at the goal (distance still to go along the heading)
        to_stop = max(0.0, min(remaining, max(goal_ahead, 0.0)) - p.goal_precision * self.xy_tol)
        v = min(v, max(math.sqrt(2.0 * p.max_linear_decel * to_stop), p.min_approach_linear_velocity))
        v = min(v, p.desired_linear_vel)
        v, _ = self._limit(v, 0.0, dt)
        v = max(v, 0.0)
        w = v * curvature
        if abs(w) > p.max_angular_vel:
            w = math.copysign(p.max_angular_vel, w)
            v = abs(w / curvature)
        w_lim = min(max(w, self.w_prev - p.max_angular_accel * dt), self.w_prev + p.max_angular_accel * dt)
        if w_lim != w and abs(curvature) > 1e-9:
            v = min(v, abs(w_lim / curvature))  # keep the curvature: slow down instead of drifting off
        w = w_lim
        return self._out(v, w, state, remaining, dg, yaw_err, carrot=carrot, curvature=curvature)
