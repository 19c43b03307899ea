"""nav_controller's goal handling and bookkeeping around the Navigator (pure Python, no rclpy).

:class:`NavCore` is what :mod:`rlstack_nav.nav_node` decides, without ROS: the odometry history and
``map -> odom``, goals (frames, refusals, preemption, the end of a goal), the control cycle with its
pause while localisation is lost, the odometry watchdog, injected obstacles, depth frames into the
obstacle layer, and the diagnostics values. It talks back through :class:`NavOutputs` (the node
turns those calls into messages) and logs through the ``info``/``warning`` callables it is given.
"""

from __future__ import annotations

import math
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from rlstack_nav.navigator import Code, NavResult, Navigator
from rlstack_nav.obstacles import CameraModel, quat_to_matrix, yaw_from_quat
from rlstack_nav.transforms import se2_compose, static_chain

__all__ = ["NavCore", "NavOutputs"]

Pose2 = Tuple[float, float, float]
Quat = Sequence[float]   # x, y, z, w
Log = Callable[[str], None]


class NavOutputs:
    """What the core asks of the node (default: nothing; the node overrides all five)."""

    def stop(self) -> None:
        """Send a zero velocity."""

    def command(self, v: float, w: float) -> None:
        """Send a velocity."""

    def plan(self, empty: bool = False) -> None:
        """Publish the current path (``empty``: an empty one)."""

    def feedback(self, state: str, distance_remaining: float) -> None:
        """Action feedback of the running goal."""

    def goal_done(self, result: NavResult) -> None:
        """The goal ended: complete the action waiting for it, if any."""


def _valid_quat(q: Quat, eps: float) -> bool:
    return q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3] >= eps


class NavCore:
    """Goal handling and bookkeeping of nav_controller.

    :param nav: the navigator (planner, controller, obstacle layer)
    :param cfg: the node's parameter values by name (odom_timeout_s, control_rate_hz, ...)
    :param map_to_odom: a fixed ``map -> odom`` (publish_map_to_odom), or None: read it from
        transforms (:meth:`transform`)
    :param now: the steady clock, s
    """

    def __init__(self, nav: Navigator, cfg: Dict[str, Any], out: NavOutputs, now: Callable[[], float],
                 info: Log, warning: Log) -> None:
        self.nav, self.cfg, self.out, self.now = nav, cfg, out, now
        self._info, self._warning = info, warning
        self.map_frame, self.odom_frame, self.base_frame = cfg["map_frame"], cfg["odom_frame"], cfg["base_frame"]
        self.fixed_map_to_odom = bool(cfg["publish_map_to_odom"])
        self.map_to_odom: Optional[Pose2] = None
        if self.fixed_map_to_odom:
            self.map_to_odom = (cfg["map_to_odom_x"], cfg["map_to_odom_y"], cfg["map_to_odom_yaw"])
        self.odom_pose: Optional[Pose2] = None                        # base in odom
        self.odom_stamp = -math.inf
        self.odom_arrival = -math.inf                                 # steady clock
        self.odom_history: List[Tuple[float, Pose2]] = []
        self.base_height = 0.0     # base_frame above the floor: the latest odometry z
        self.last_cycle_stamp = -math.inf
        self.last_feedback = -math.inf
        self.goal_source = ""
        self.commanding_until = -math.inf                             # steady time; keep sending zeros
        self.static_tf: Dict[str, Tuple[str, np.ndarray]] = {}
        self.camera: Optional[CameraModel] = None
        self.last_depth_stamp = -math.inf
        self.counts: Dict[str, int] = {}
        self._last_reject_log: Dict[str, float] = {}
        self.results: Dict[str, int] = {c.name: 0 for c in Code}
        self.last_result: Optional[NavResult] = None
        self.cycle_time_ema = 0.0
        self.depth_time_ema = 0.0
        self.localization_state = ""                                  # last /localization/state text
        self.lost_since: Optional[float] = None                       # steady time a goal paused (lost)
        self.lost_pauses = 0

    # ------------------------------------------------------------------ bookkeeping
    def reject(self, kind: str, message: str) -> None:
        """Count bad input and log it once per kind every 5 s (own throttle: rclpy's throttled
        logging refuses different filters from one call site)."""
        self.counts[kind] = self.counts.get(kind, 0) + 1
        now = self.now()
        if now - self._last_reject_log.get(kind, -math.inf) >= 5.0:
            self._last_reject_log[kind] = now
            self._warning(f"rejected {kind}: {message} ({self.counts[kind]} so far)")

    # ------------------------------------------------------------------ transforms
    def static_transform(self, parent: str, child: str, matrix: np.ndarray) -> None:
        self.static_tf[child] = (parent, matrix)

    def transform(self, parent: str, child: str, x: float, y: float, q: Quat) -> None:
        """A transform from /tf or /tf_static: ``map -> odom`` is taken unless it is fixed."""
        if not self.fixed_map_to_odom and parent == self.map_frame and child == self.odom_frame:
            self.map_to_odom = (x, y, yaw_from_quat(tuple(q)))

    def chain(self, frame: str) -> Optional[np.ndarray]:
        """base_frame -> ``frame`` from the static transforms (None if not connected)."""
        return static_chain(self.static_tf, self.base_frame, frame, max_links=21)

    def map_pose(self, odom_pose) -> Optional[Pose2]:
        if self.map_to_odom is None or odom_pose is None:
            return None
        return se2_compose(self.map_to_odom, odom_pose)

    def odom_at(self, stamp: float):
        if not self.odom_history:
            return None
        best = min(self.odom_history, key=lambda e: abs(e[0] - stamp))
        return best[1]

    def set_localization_state(self, text: str) -> None:
        was = self.localization_lost
        self.localization_state = text
        if self.localization_lost != was:   # two call sites: rclpy refuses one call site at two severities
            if self.localization_lost:
                self._warning(f"localisation: {text}; goals refused / paused")
            else:
                self._info(f"localisation: {text}; goals resume")

    @property
    def localization_lost(self) -> bool:
        return self.localization_state.startswith("LOST")

    # ------------------------------------------------------------------ inputs
    def odometry(self, x: float, y: float, z: float, q: Quat, stamp: float) -> bool:
        """An /odom message (base in odom). True when a control cycle is due now."""
        if not all(math.isfinite(v) for v in (x, y, *q)) or not _valid_quat(q, 1e-6):
            self.reject("odometry", "non-finite or zero-quaternion pose")
            return False
        if stamp < self.odom_stamp - 1.0:  # time went back (simulation reset): start over
            self.odom_history.clear()
            self.last_cycle_stamp = -math.inf
            self.nav._last_t = None
        self.odom_pose = (x, y, yaw_from_quat(tuple(q)))
        self.base_height = z if math.isfinite(z) else 0.0
        self.odom_stamp = stamp
        self.odom_arrival = self.now()
        self.odom_history.append((stamp, self.odom_pose))
        if len(self.odom_history) > 120:
            del self.odom_history[:-60]
        period = 1.0 / self.cfg["control_rate_hz"]
        if self.nav.active and stamp - self.last_cycle_stamp >= period * 0.999:
            self.last_cycle_stamp = stamp
            return True
        return False

    def inject_obstacles(self, frame: str, points: Sequence[Tuple[float, float]]) -> None:
        """``~/obstacles``: points in ``frame`` (map or odom; '' = map); none clears all obstacles."""
        if not points:
            self.nav.obstacles.clear()
            self._info("obstacles cleared (empty ~/obstacles message)")
            return
        frame = frame or self.map_frame
        pts = []
        for xy in points:
            if not all(math.isfinite(v) for v in xy):
                self.reject("obstacle", "non-finite point")
                continue
            if frame == self.odom_frame:
                if self.map_to_odom is None:
                    self.reject("obstacle", "odom frame before map -> odom is known")
                    return
                xy = se2_compose(self.map_to_odom, (xy[0], xy[1], 0.0))[:2]
            elif frame != self.map_frame:
                self.reject("obstacle", f"unknown frame '{frame}' (use {self.map_frame} or {self.odom_frame})")
                return
            pts.append(xy)
        new = self.nav.obstacles.add_points(np.array(pts).reshape(-1, 2), self.odom_stamp if math.isfinite(
            self.odom_stamp) else 0.0)
        if new:   # only what changed the map: a sender repeating its points (or a flood) logs nothing
            self._info(f"{len(pts)} injected obstacle point(s), {new} new cell(s)")

    def set_camera(self, k: Sequence[float], width: int, height: int) -> None:
        if k[0] <= 0 or k[4] <= 0:
            self.reject("camera_info", "non-positive focal length")
            return
        self.camera = CameraModel(k[0], k[4], k[2], k[5], width, height)

    def depth(self, stamp: float, frame_id: str, encoding: str, width: int, height: int, step: int,
              bigendian: bool, data) -> None:
        """A depth image (32FC1, metres): obstacles seen at ``stamp`` into the obstacle layer."""
        if stamp - self.last_depth_stamp < 1.0 / self.cfg["depth_rate_hz"] and stamp >= self.last_depth_stamp:
            return
        if self.camera is None or self.map_to_odom is None or not self.odom_history:
            return
        if encoding != "32FC1":
            self.reject("depth", f"encoding {encoding} (need 32FC1)")
            return
        if step < width * 4 or len(data) < step * height:
            self.reject("depth", "image data shorter than width x height")
            return
        base_cam = self.chain(frame_id)
        if base_cam is None:
            self.reject("depth", f"no static transform {self.base_frame} -> {frame_id} yet")
            return
        t0 = time.perf_counter()
        self.last_depth_stamp = stamp
        dtype = np.dtype(">f4") if bigendian else np.dtype("<f4")
        rows = np.frombuffer(bytes(data), dtype=np.uint8).reshape(height, step)
        depth = rows[:, :width * 4].copy().view(dtype).reshape(height, width).astype(np.float32)
        odom_pose = self.odom_at(stamp)
        bx, by, byaw = self.map_pose(odom_pose)
        # the base is planar (z = wheel radius in odom is folded into the static chain's z)
        map_base = np.eye(4)
        map_base[:3, :3] = quat_to_matrix((0.0, 0.0, math.sin(byaw / 2), math.cos(byaw / 2)))
        map_base[:3, 3] = (bx, by, self.base_height)
        m = map_base @ base_cam
        self.nav.obstacles.update_from_depth(depth, self.camera, m[:3, :3], m[:3, 3], (bx, by), stamp)
        self.depth_time_ema = 0.9 * self.depth_time_ema + 0.1 * (time.perf_counter() - t0)

    # ------------------------------------------------------------------ goals
    def goal_in_map(self, frame: str, x: float, y: float, q: Quat) -> Tuple[Optional[Pose2], str]:
        if not all(math.isfinite(v) for v in (x, y, *q)):
            return None, "goal pose is not finite"
        if not _valid_quat(q, 1e-6):
            return None, "goal orientation is a zero quaternion"
        yaw = yaw_from_quat(tuple(q))
        frame = frame or self.map_frame
        if frame == self.map_frame:
            return (x, y, yaw), ""
        if frame == self.odom_frame:
            if self.map_to_odom is None:
                return None, f"goal in {self.odom_frame} but map -> odom is not known yet"
            return se2_compose(self.map_to_odom, (x, y, yaw)), ""
        return None, f"unknown goal frame '{frame}' (use {self.map_frame} or {self.odom_frame})"

    def start_goal(self, frame: str, x: float, y: float, q: Quat, xy_tol: float, yaw_tol: float,
                   source: str) -> Optional[NavResult]:
        """Plan and start a goal: None when it runs, else the result that refuses it."""
        goal, why = self.goal_in_map(frame, x, y, q)
        if goal is None:
            self.reject("goal", why)
            return NavResult(Code.INVALID_GOAL, why)
        if self.localization_lost:
            why = f"localisation lost ({self.localization_state}); give the localiser an initial pose"
            self.reject("goal_localization_lost", why)
            return NavResult(Code.LOCALIZATION_LOST, f"cannot start: {why}")
        age = self.now() - self.odom_arrival
        robot = self.map_pose(self.odom_pose)
        if robot is None or age > self.cfg["odom_timeout_s"]:
            what = "no odometry received" if self.odom_pose is None else f"odometry is {age:.1f} s old"
            if self.odom_pose is not None and robot is None:
                what = "map -> odom transform not known (publish_map_to_odom false and nothing on /tf)"
            return NavResult(Code.STALE_ODOMETRY, f"cannot start: {what} on {self.cfg['odom_topic']}")
        self.goal_source = source
        result = self.nav.set_goal(goal, robot, self.odom_stamp, float(xy_tol), float(yaw_tol))
        if result is None:
            self.out.plan()
            self.commanding_until = self.now() + 5.0
            self.last_cycle_stamp = -math.inf
            self._info(
                f"goal ({goal[0]:.2f}, {goal[1]:.2f}, {goal[2]:.2f}) from {source}: path "
                f"{self.nav.last_plan.length:.2f} m, planned in {1000 * self.nav.last_plan.time_s:.0f} ms")
        return result

    def preempt(self, reason: str) -> None:
        if self.nav.active:
            self.finish(self.nav.cancel(self.map_pose(self.odom_pose), reason))

    def finish(self, result: NavResult) -> None:
        """A goal ended (or was refused): stop, publish, and complete the action if there is one."""
        self.results[result.code.name] += 1
        self.last_result = result
        self.out.stop()
        self.out.plan(empty=True)
        # two call sites: rclpy refuses one call site logging at two severities (it raised here)
        text = (f"goal {result.code.name}: {result.reason} (distance {result.final_distance:.3f} m, "
                f"yaw error {result.final_yaw_error:.3f} rad)")
        if result.code == Code.SUCCEEDED:
            self._info(text)
        else:
            self._warning(text)
        self.out.goal_done(result)

    def plan_poses(self) -> List[Pose2]:
        """The current path as poses in map, each heading to the next (the last: the goal's yaw)."""
        path = self.nav.path
        if not len(path):
            return []
        headings = np.arctan2(np.diff(path[:, 1]), np.diff(path[:, 0])) if len(path) > 1 else np.zeros(0)
        goal_yaw = self.nav.goal[2] if self.nav.goal is not None else 0.0
        headings = np.append(headings, goal_yaw)
        return [(float(x), float(y), yaw) for (x, y), yaw in zip(path, headings)]

    # ------------------------------------------------------------------ control
    def _feedback_due(self) -> bool:
        return self.odom_stamp - self.last_feedback >= 1.0 / self.cfg["feedback_rate_hz"]

    def control_cycle(self, has_handle: bool, cancel_requested: bool) -> None:
        """One control cycle of the running goal (``has_handle``: an action waits for it)."""
        robot = self.map_pose(self.odom_pose)
        if has_handle and cancel_requested:
            self.finish(self.nav.cancel(robot, "canceled on request"))
            return
        if self.localization_lost:   # pause: stop and wait for the localiser (or give up after the timeout)
            self.pause_for_localization(robot, has_handle)
            return
        if self.lost_since is not None:
            self._info(f"localisation back after {self.now() - self.lost_since:.1f} s: goal resumes")
            self.lost_since = None
        t0 = time.perf_counter()
        step = self.nav.step(robot, self.odom_stamp)
        self.cycle_time_ema = 0.9 * self.cycle_time_ema + 0.1 * (time.perf_counter() - t0)
        if step.path_changed:
            self.out.plan()
        if step.result is not None:
            self.finish(step.result)
            return
        self.out.command(float(step.v), float(step.w))
        self.commanding_until = self.now() + 5.0
        if has_handle and self._feedback_due():
            self.last_feedback = self.odom_stamp
            self.out.feedback(step.state, float(step.distance_remaining))

    def pause_for_localization(self, robot, has_handle: bool) -> None:
        now = self.now()
        if self.lost_since is None:
            self.lost_since = now
            self.lost_pauses += 1
            self._warning(f"goal paused: localisation lost ({self.localization_state})")
        self.out.stop()
        timeout = self.cfg["localization_lost_timeout_s"]
        if now - self.lost_since > timeout:
            self.lost_since = None
            self.finish(self.nav.abort(Code.LOCALIZATION_LOST,
                                       f"localisation lost for more than localization_lost_timeout_s {timeout:g} s "
                                       f"({self.localization_state}): base stopped", robot))
            return
        if has_handle and self._feedback_due():
            self.last_feedback = self.odom_stamp
            self.out.feedback("LOCALIZATION_LOST", float("nan"))

    def watchdog(self) -> None:
        """Stale odometry: abort the goal (STALE_ODOMETRY) and keep the base stopped."""
        now = self.now()
        age = now - self.odom_arrival
        if age <= self.cfg["odom_timeout_s"]:
            # a goal waiting in REPLANNING with no odometry change still needs its cycles: odometry drives them
            return
        if self.nav.active:
            what = "never received" if self.odom_pose is None else f"none for {age:.2f} s"
            self.finish(self.nav.abort(Code.STALE_ODOMETRY,
                                       f"odometry on {self.cfg['odom_topic']} is stale ({what}; odom_timeout_s "
                                       f"{self.cfg['odom_timeout_s']:g} s): base stopped",
                                       self.map_pose(self.odom_pose)))
        if now < self.commanding_until:
            self.out.stop()  # keep the base stopped while odometry is stale

    # ------------------------------------------------------------------ diagnostics
    def diagnostics(self) -> Tuple[bool, str, Dict[str, str]]:
        """(warn, message, key -> value) of the navigation status."""
        age = self.now() - self.odom_arrival
        stale = age > self.cfg["odom_timeout_s"]
        warn = stale or self.localization_lost
        message = ("odometry stale" if stale else "localisation lost: goals paused" if self.localization_lost
                   else "ok") + (
            f"; last goal {self.last_result.code.name}: {self.last_result.reason}" if self.last_result else "")
        kv = {
            "state": self.nav.state if self.nav.active else "IDLE",
            "odometry_age_s": f"{age:.3f}" if math.isfinite(age) else "never",
            "obstacle_cells": str(self.nav.obstacles.count()),
            "plans": str(self.nav.plans),
            "last_plan_ms": f"{1000 * self.nav.last_plan.time_s:.1f}" if self.nav.last_plan else "-",
            "controller_cycle_ms": f"{1000 * self.cycle_time_ema:.2f}",
            "depth_update_ms": f"{1000 * self.depth_time_ema:.1f}",
            "localization": self.localization_state or "-",
            "localization_pauses": str(self.lost_pauses),
        }
        kv.update({f"results_{k.lower()}": str(v) for k, v in self.results.items()})
        kv.update({f"rejected_{k}": str(v) for k, v in self.counts.items()})
        return warn, message, kv
