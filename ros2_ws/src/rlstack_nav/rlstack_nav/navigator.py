"""The navigate-to state machine: plan, follow, check, replan, arrive, or say why not (no rclpy).

The node (:mod:`rlstack_nav.nav_node`) and the in-process evaluation (:mod:`rlstack_nav.evaluate`)
drive the same :class:`Navigator`:

* :meth:`Navigator.set_goal` validates and plans at once: a goal that is not finite or outside the
  map answers ``INVALID_GOAL``; a goal inside or too close to a map obstacle, or not connected to
  the robot's free space, answers ``UNREACHABLE``; all within one planner call (tens of ms).
* :meth:`Navigator.step` runs one control cycle: collision check of the next
  ``collision_check_distance`` metres of the path against the map and the dynamic obstacles; if
  blocked, brake and replan around the obstacles (``REPLANNING``); a replan that finds no clear
  path is retried every ``replan_interval`` until ``blocked_timeout`` has passed, or more than
  ``max_replans`` replans were needed, and then the goal ends ``BLOCKED`` with the reason. A robot
  more than ``max_path_deviation`` from its path also replans. Otherwise the regulated pure
  pursuit controller computes ``(v, w)``; when it has stopped within the tolerances the goal ends
  ``SUCCEEDED``. ``goal_timeout`` bounds the whole goal (``TIMEOUT``).
* :meth:`Navigator.cancel` and :meth:`Navigator.abort` end the goal (``CANCELED``,
  ``STALE_ODOMETRY`` from the node's watchdog); the caller then sends zero velocity.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, field
from typing import Optional, Sequence, Tuple

import numpy as np

from rlstack_nav.collision import CollisionResult, check_path, point_clearance
from rlstack_nav.controller import (
    APPROACHING,
    DONE,
    FINAL_ROTATING,
    FOLLOWING,
    ROTATING,
    ControllerParams,
    RegulatedPurePursuit,
    wrap_angle,
)
from rlstack_nav.grid import CostParams, Costmap, OccupancyGrid
from rlstack_nav.obstacles import ObstacleLayer, ObstacleParams
from rlstack_nav.planner import FailureKind, GridPlanner, PlanResult


class Code(enum.IntEnum):
    """Result codes; the values equal rlstack_interfaces/action/NavigateTo's constants."""

    SUCCEEDED = 0
    UNREACHABLE = 1
    BLOCKED = 2
    CANCELED = 3
    TIMEOUT = 4
    STALE_ODOMETRY = 5
    INVALID_GOAL = 6
    LOCALIZATION_LOST = 7


PLANNING, REPLANNING = "PLANNING", "REPLANNING"
#: controller state -> action feedback state
FEEDBACK_STATE = {ROTATING: "ROTATING", FINAL_ROTATING: "ROTATING", FOLLOWING: "FOLLOWING",
                  APPROACHING: "APPROACHING", DONE: "APPROACHING"}


@dataclass
class NavParams:
    cost: CostParams = field(default_factory=CostParams)
    controller: ControllerParams = field(default_factory=ControllerParams)
    obstacles: ObstacleParams = field(default_factory=ObstacleParams)
    collision_check_distance: float = 1.5   # m of path ahead checked every cycle
    replan_interval: float = 0.5            # s between replans while blocked
    blocked_timeout: float = 3.0            # s without a clear path before BLOCKED
    max_replans: int = 10                   # blocked-path replans per goal before BLOCKED
    max_path_deviation: float = 0.5         # m off the path before a replan
    goal_timeout: float = 180.0             # s per goal (0: none) before TIMEOUT
    path_spacing: float = 0.05              # m between the points of the published path
    max_dt: float = 0.2                     # s; longer gaps between cycles are clamped


@dataclass
class NavResult:
    code: Code
    reason: str
    final_distance: float = math.nan
    final_yaw_error: float = math.nan


@dataclass
class NavStep:
    v: float
    w: float
    state: str
    distance_remaining: float
    result: Optional[NavResult] = None
    path_changed: bool = False


class Navigator:
    def __init__(self, grid: OccupancyGrid, params: Optional[NavParams] = None) -> None:
        self.p = params or NavParams()
        self.controller = RegulatedPurePursuit(self.p.controller)
        self.set_map(grid)
        self.goal: Optional[Tuple[float, float, float]] = None
        self.path = np.zeros((0, 2))
        self.state = "IDLE"
        self.replans = 0
        self.plans = 0
        self.last_plan: Optional[PlanResult] = None
        self.last_collision = CollisionResult(False)
        self._last_t: Optional[float] = None
        self._path_changed = False

    # ------------------------------------------------------------------------- map
    def set_map(self, grid: OccupancyGrid) -> None:
        self.grid = grid
        self.static = Costmap(grid, self.p.cost)
        self.planner = GridPlanner(self.static, densify=self.p.path_spacing)
        self.obstacles = ObstacleLayer(grid, self.static.distance, self.p.obstacles)
        self._dyn_version = -1
        self._dyn_costmap = self.static

    def costmap(self) -> Costmap:
        """Static map + dynamic obstacles (rebuilt only when the obstacles changed)."""
        if self.obstacles.version != self._dyn_version:
            self._dyn_version = self.obstacles.version
            self._dyn_costmap = (Costmap(self.grid, self.p.cost, self.obstacles.marked)
                                 if self.obstacles.marked.any() else self.static)
        return self._dyn_costmap

    @property
    def active(self) -> bool:
        return self.goal is not None

    # ------------------------------------------------------------------------ goals
    def set_goal(self, goal: Sequence[float], robot_pose: Sequence[float], now: float,
                 xy_tolerance: float = 0.0, yaw_tolerance: float = 0.0) -> Optional[NavResult]:
        """Start a goal ``(x, y, yaw)`` (map frame). Returns a result at once if the goal is refused."""
        self.goal = None
        self.path = np.zeros((0, 2))
        self.controller.reset()
        gx, gy, gyaw = (float(v) for v in goal)
        rx, ry, _ = (float(v) for v in robot_pose)
        if not all(math.isfinite(v) for v in (gx, gy, gyaw, xy_tolerance, yaw_tolerance)):
            return NavResult(Code.INVALID_GOAL, f"goal ({gx}, {gy}, yaw {gyaw}) or its tolerances are not finite")
        if xy_tolerance < 0 or yaw_tolerance < 0:
            return NavResult(Code.INVALID_GOAL, "tolerances must be >= 0 (0: the controller's defaults)")
        if self.planner.costmap is not self.static:
            self.planner.set_costmap(self.static)  # refusals are judged on the map alone
        check = self.planner.check_goal((gx, gy))
        if not check.ok:
            code = Code.INVALID_GOAL if check.failure == FailureKind.OUTSIDE_MAP else Code.UNREACHABLE
            return self._final(NavResult(code, check.reason), robot_pose)
        self.goal = (gx, gy, wrap_angle(gyaw))
        self.tolerances = (xy_tolerance, yaw_tolerance)
        self.start_time = now
        self.replans = 0
        self._blocked_since: Optional[float] = None
        self._last_replan = -math.inf
        self._last_t = now
        self.state = PLANNING
        res = self._plan(robot_pose, self.static)
        if not res.ok:
            return self._end(NavResult(Code.UNREACHABLE, res.reason), robot_pose)
        if self.obstacles.marked.any():
            dyn = self._plan(robot_pose, self.costmap())
            if not dyn.ok:  # reachable on the map, cut off by obstacles seen since
                self.path = res.path
                self._enter_blocked(now, f"{dyn.reason} (obstacles seen by the sensors)")
                return None
            res = dyn
        self._use_path(res)
        return None

    def cancel(self, robot_pose: Sequence[float], reason: str = "canceled on request") -> Optional[NavResult]:
        if not self.active:
            return None
        return self._end(NavResult(Code.CANCELED, reason), robot_pose)

    def abort(self, code: Code, reason: str, robot_pose: Optional[Sequence[float]] = None) -> Optional[NavResult]:
        if not self.active:
            return None
        return self._end(NavResult(code, reason), robot_pose)

    # --------------------------------------------------------------------- internals
    def _plan(self, robot_pose: Sequence[float], costmap: Costmap) -> PlanResult:
        if self.planner.costmap is not costmap:
            self.planner.set_costmap(costmap)
        res = self.planner.plan(robot_pose[:2], self.goal[:2])
        self.plans += 1
        self.last_plan = res
        return res

    def _use_path(self, res: PlanResult) -> None:
        self.path = res.path
        self.controller.set_path(res.path, self.goal[2], *self.tolerances)
        self._path_changed = True
        self.state = FOLLOWING

    def _final(self, result: NavResult, robot_pose: Optional[Sequence[float]]) -> NavResult:
        if robot_pose is not None and self.goal is not None:
            rx, ry, ryaw = (float(v) for v in robot_pose)
            result.final_distance = math.hypot(self.goal[0] - rx, self.goal[1] - ry)
            result.final_yaw_error = abs(wrap_angle(self.goal[2] - ryaw))
        return result

    def _end(self, result: NavResult, robot_pose: Optional[Sequence[float]]) -> NavResult:
        result = self._final(result, robot_pose)
        self.goal = None
        self.state = "IDLE"
        self.controller.state = DONE if result.code == Code.SUCCEEDED else "IDLE"
        self.controller.path = np.zeros((0, 2))
        return result

    def _enter_blocked(self, now: float, reason: str) -> None:
        if self._blocked_since is None:
            self._blocked_since = now
        self._blocked_reason = reason
        self.state = REPLANNING

    def _brake(self, dt: float) -> Tuple[float, float]:
        c = self.controller
        v, w = c._limit(0.0, 0.0, dt)
        c.v_prev, c.w_prev = v, w
        return v, w

    def _try_replan(self, robot_pose: Sequence[float], now: float) -> bool:
        self._last_replan = now
        self.replans += 1
        res = self._plan(robot_pose, self.costmap())
        if res.ok:
            col = self._check(res.path, 0, robot_pose)
            if not col.blocked:
                self._blocked_since = None
                self._use_path(res)
                return True
            self._blocked_reason = f"replanned path is still blocked: {col.describe()}"
        else:
            self._blocked_reason = res.reason + " (obstacles seen by the sensors)"
        return False

    def _check(self, path: np.ndarray, start: int, robot_pose: Sequence[float]) -> CollisionResult:
        """Lethal cells of map + obstacles along the next stretch: the planner's own criterion, so a
        freshly planned path is never reported blocked by a rounding difference."""
        cm = self.costmap()
        res = check_path(cm, path, start, self.p.collision_check_distance)
        if res.blocked and cm is not self.static and not self.static.is_lethal(*res.point):
            res.source = "obstacle"
        return res

    def step(self, robot_pose: Sequence[float], now: float) -> NavStep:
        """One control cycle at time ``now`` (s) with the robot at ``(x, y, yaw)`` (map frame)."""
        dt = 0.0 if self._last_t is None else now - self._last_t
        self._last_t = now
        dt = min(max(dt, 1e-3), self.p.max_dt)
        if not self.active:
            v, w = self._brake(dt)
            return NavStep(v, w, "IDLE", 0.0)
        rx, ry, ryaw = (float(v) for v in robot_pose)
        if not all(math.isfinite(v) for v in (rx, ry, ryaw)):
            return self._step_end(NavResult(Code.STALE_ODOMETRY, "robot pose is not finite"), None, dt)
        if self.p.goal_timeout > 0 and now - self.start_time > self.p.goal_timeout:
            return self._step_end(NavResult(
                Code.TIMEOUT, f"goal not reached within goal_timeout {self.p.goal_timeout:.1f} s"), robot_pose, dt)

        if self.state == REPLANNING:
            if now - self._last_replan >= self.p.replan_interval and self._try_replan(robot_pose, now):
                pass  # fall through to following the new path
            else:
                waited = now - self._blocked_since
                if waited >= self.p.blocked_timeout or self.replans > self.p.max_replans:
                    why = (f"still blocked after {waited:.1f} s and {self.replans} replan(s): "
                           f"{self._blocked_reason}")
                    return self._step_end(NavResult(Code.BLOCKED, why), robot_pose, dt)
                v, w = self._brake(dt)
                return NavStep(v, w, REPLANNING, self._remaining(robot_pose))
        else:
            idx = self.controller._idx
            col = self._check(self.path, idx, robot_pose)
            self.last_collision = col
            deviation = float(np.min(np.hypot(self.path[:, 0] - rx, self.path[:, 1] - ry))) if len(self.path) else 0.0
            if col.blocked or deviation > self.p.max_path_deviation:
                if col.blocked:
                    self._enter_blocked(now, col.describe())
                    if self.replans >= self.p.max_replans:
                        why = f"path blocked again after {self.replans} replan(s): {col.describe()}"
                        return self._step_end(NavResult(Code.BLOCKED, why), robot_pose, dt)
                if not self._try_replan(robot_pose, now):
                    if not col.blocked:
                        self._enter_blocked(now, self._blocked_reason)
                    v, w = self._brake(dt)
                    return NavStep(v, w, REPLANNING, self._remaining(robot_pose), path_changed=False)

        pts = self.obstacles.points() if self.obstacles.marked.any() else None
        clearance = point_clearance(self.static, rx, ry, pts)
        out = self.controller.compute((rx, ry, ryaw), dt, clearance)
        changed, self._path_changed = self._path_changed, False
        if out.done:
            res = NavResult(Code.SUCCEEDED, "goal reached")
            return NavStep(out.v, out.w, "APPROACHING", 0.0, self._end(res, robot_pose), changed)
        self.state = out.state
        return NavStep(out.v, out.w, FEEDBACK_STATE.get(out.state, out.state), out.distance_remaining,
                       path_changed=changed)

    def _remaining(self, robot_pose: Sequence[float]) -> float:
        if self.goal is None:
            return 0.0
        if len(self.path) > 1:
            d = np.hypot(*np.diff(self.path, axis=0).T)
            k = int(np.argmin(np.hypot(self.path[:, 0] - robot_pose[0], self.path[:, 1] - robot_pose[1])))
            return float(math.hypot(self.path[k, 0] - robot_pose[0], self.path[k, 1] - robot_pose[1]) + d[k:].sum())
        return math.hypot(self.goal[0] - robot_pose[0], self.goal[1] - robot_pose[1])

    def _step_end(self, result: NavResult, robot_pose, dt: float) -> NavStep:
        v, w = self._brake(dt)
        result = self._end(result, robot_pose)
        return NavStep(0.0, 0.0, "IDLE", 0.0, result)
