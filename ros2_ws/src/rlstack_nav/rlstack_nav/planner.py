"""Global planner: A* on an inflated occupancy grid, then any-angle shortcutting.

* 8-connected A* over the :class:`~rlstack_nav.grid.Costmap`: a move costs its length (m) times
  the mean traversal cost per metre of its two cells (1 in open space, more near obstacles, see
  ``CostParams``); lethal cells (closer to an obstacle than the robot radius) are never entered;
  diagonal moves may not cut an obstacle's corner. The octile distance is an admissible, consistent
  heuristic (every metre costs at least 1), so the grid path is optimal for that cost.
* Shortcutting (the post-processing form of Theta*): from each path vertex, jump to the farthest
  later vertex whose straight segment crosses no lethal cell and costs no more than the grid
  sub-path it replaces. This removes the 45-degree zig-zags of grid paths.
* Failures are answers: :class:`PlanResult` carries ``ok=False``, a :class:`FailureKind` and a
  human-readable ``reason`` (goal outside the map, goal in an obstacle or too close to one, start
  in an obstacle, or no connection).
"""

from __future__ import annotations

import enum
import heapq
import math
import time
from dataclasses import dataclass, field
from typing import List, Optional, Sequence, Tuple

import numpy as np

from rlstack_nav.grid import Costmap

SQRT2 = math.sqrt(2.0)


class FailureKind(enum.Enum):
    NONE = "none"
    OUTSIDE_MAP = "outside_map"        # -> INVALID_GOAL
    GOAL_OCCUPIED = "goal_occupied"    # -> UNREACHABLE
    START_OCCUPIED = "start_occupied"  # -> UNREACHABLE
    NO_PATH = "no_path"                # -> UNREACHABLE (or BLOCKED when only new obstacles cut it)


@dataclass
class PlanResult:
    ok: bool
    path: np.ndarray = field(default_factory=lambda: np.zeros((0, 2)))  # (N, 2) map-frame metres
    reason: str = ""
    failure: FailureKind = FailureKind.NONE
    cost: float = math.inf          # A* cost of the grid path (cost-weighted metres)
    grid_length: float = math.inf   # metric length of the grid path (m)
    length: float = math.inf        # metric length of the returned (shortcut) path (m)
    expansions: int = 0
    time_s: float = 0.0


def path_length(path: np.ndarray) -> float:
    p = np.asarray(path, float).reshape(-1, 2)
    return float(np.hypot(*np.diff(p, axis=0).T).sum()) if len(p) > 1 else 0.0


def _fmt(x: float, y: float) -> str:
    return f"({x:.2f}, {y:.2f})"


class GridPlanner:
    """A* + shortcutting on a :class:`Costmap`.

    :param smooth: shortcut the grid path (any-angle); False returns the raw 8-connected path
    :param densify: spacing of the returned path's points (m); 0 keeps only the vertices
    :param max_expansions: give up (``NO_PATH``) after this many node expansions (0: no limit)
    """

    def __init__(self, costmap: Costmap, smooth: bool = True, densify: float = 0.05,
                 max_expansions: int = 0) -> None:
        self.smooth = smooth
        self.densify = densify
        self.max_expansions = max_expansions
        self.set_costmap(costmap)

    def set_costmap(self, costmap: Costmap) -> None:
        self.costmap = costmap
        grid = costmap.grid
        h, w = grid.height, grid.width
        self._w = w + 2  # padded by one lethal cell on every side: no bounds checks in the loop
        padded = np.full((h + 2, w + 2), np.inf)
        padded[1:-1, 1:-1] = costmap.cost
        self._cost_flat: List[float] = padded.ravel().tolist()
        self._lethal_padded = ~np.isfinite(padded)

    # -------------------------------------------------------------------------- helpers
    def _idx(self, row: int, col: int) -> int:
        return (row + 1) * self._w + (col + 1)

    def _rc(self, idx: int) -> Tuple[int, int]:
        r, c = divmod(idx, self._w)
        return r - 1, c - 1

    def _escape(self, row: int, col: int) -> Optional[Tuple[int, int]]:
        """Nearest non-lethal cell reachable from a lethal (inflated, not occupied) start cell
        through non-occupied cells, within the robot radius; None if there is none."""
        cm = self.costmap
        max_cells = int(math.ceil(cm.params.robot_radius / cm.resolution)) + 1
        h, w = cm.grid.height, cm.grid.width
        seen = {(row, col)}
        frontier = [(row, col)]
        for _ in range(max_cells):
            nxt = []
            best = None
            for r, c in frontier:
                for dr, dc in ((1, 0), (-1, 0), (0, 1), (0, -1), (1, 1), (1, -1), (-1, 1), (-1, -1)):
                    rr, cc = r + dr, c + dc
                    if not (0 <= rr < h and 0 <= cc < w) or (rr, cc) in seen or cm.obstacles[rr, cc]:
                        continue
                    seen.add((rr, cc))
                    if not cm.lethal[rr, cc]:
                        d = cm.distance[rr, cc]
                        if best is None or d > cm.distance[best]:
                            best = (rr, cc)
                    nxt.append((rr, cc))
            if best is not None:
                return best
            frontier = nxt
        return None

    # --------------------------------------------------------------------------- public
    def plan(self, start: Sequence[float], goal: Sequence[float]) -> PlanResult:
        t0 = time.perf_counter()
        res = self._plan(start, goal)
        res.time_s = time.perf_counter() - t0
        return res

    def check_goal(self, goal: Sequence[float]) -> PlanResult:
        """Validate a goal alone (outside the map, in or too close to an obstacle)."""
        cm, grid = self.costmap, self.costmap.grid
        gx, gy = float(goal[0]), float(goal[1])
        if not (math.isfinite(gx) and math.isfinite(gy)):
            return PlanResult(False, reason=f"goal {_fmt(gx, gy)} is not finite", failure=FailureKind.OUTSIDE_MAP)
        gr, gc = (int(v) for v in grid.world_to_index(gx, gy))
        if not grid.contains(gr, gc):
            x0, y0 = grid.cell_to_world(0, 0)
            x1, y1 = grid.cell_to_world(grid.height - 1, grid.width - 1)
            return PlanResult(False, failure=FailureKind.OUTSIDE_MAP,
                              reason=f"goal {_fmt(gx, gy)} is outside the map "
                                     f"(x {x0:.2f}..{x1:.2f}, y {y0:.2f}..{y1:.2f} m)")
        if cm.obstacles[gr, gc]:
            what = "unknown space" if grid.data[gr, gc] < 0 else "an obstacle"
            return PlanResult(False, failure=FailureKind.GOAL_OCCUPIED,
                              reason=f"goal {_fmt(gx, gy)} is inside {what}")
        if cm.lethal[gr, gc]:
            return PlanResult(False, failure=FailureKind.GOAL_OCCUPIED,
                              reason=f"goal {_fmt(gx, gy)} is {cm.distance[gr, gc]:.2f} m from an obstacle, "
                                     f"closer than the robot radius {cm.params.robot_radius:.2f} m")
        return PlanResult(True)

    def _plan(self, start: Sequence[float], goal: Sequence[float]) -> PlanResult:
        cm, grid = self.costmap, self.costmap.grid
        sx, sy = float(start[0]), float(start[1])
        gx, gy = float(goal[0]), float(goal[1])
        check = self.check_goal((gx, gy))
        if not check.ok:
            return check
        gr, gc = (int(v) for v in grid.world_to_index(gx, gy))
        sr, sc = (int(v) for v in grid.world_to_index(sx, sy))
        if not (math.isfinite(sx) and math.isfinite(sy)) or not grid.contains(sr, sc):
            return PlanResult(False, failure=FailureKind.START_OCCUPIED,
                              reason=f"robot position {_fmt(sx, sy)} is outside the map")
        prefix: List[Tuple[int, int]] = []
        if cm.lethal[sr, sc]:
            if cm.obstacles[sr, sc]:
                return PlanResult(False, failure=FailureKind.START_OCCUPIED,
                                  reason=f"robot position {_fmt(sx, sy)} is inside an obstacle")
            esc = self._escape(sr, sc)
            if esc is None:
                return PlanResult(False, failure=FailureKind.START_OCCUPIED,
                                  reason=f"robot at {_fmt(sx, sy)} is boxed in: no free cell within its radius")
            prefix = [(sr, sc)]
            sr, sc = esc
        cells, cost, expansions = self._astar(self._idx(sr, sc), self._idx(gr, gc))
        if cells is None:
            reason = (f"no path from {_fmt(sx, sy)} to {_fmt(gx, gy)}: the goal is not connected to the robot's "
                      f"free space ({expansions} cells explored)")
            if self.max_expansions and expansions >= self.max_expansions:
                reason = f"no path from {_fmt(sx, sy)} to {_fmt(gx, gy)} within {self.max_expansions} expansions"
            return PlanResult(False, failure=FailureKind.NO_PATH, reason=reason, expansions=expansions)
        cells = prefix + cells
        rows = np.array([c[0] for c in cells])
        cols = np.array([c[1] for c in cells])
        xs, ys = grid.cell_to_world(rows, cols)
        pts = np.column_stack([xs, ys])
        pts[0] = (sx, sy)   # start exactly at the robot
        pts[-1] = (gx, gy)  # end exactly at the goal
        grid_len = path_length(pts)
        if self.smooth and len(pts) > 2:
            pts = self._shortcut(pts, len(prefix))
        if self.densify > 0:
            pts = densify(pts, self.densify)
        return PlanResult(True, pts, cost=cost, grid_length=grid_len, length=path_length(pts), expansions=expansions)

    def _astar(self, start: int, goal: int):
        cost = self._cost_flat
        w = self._w
        gr, gc = divmod(goal, w)
        res = self.costmap.resolution
        diag = res * SQRT2
        # (offset, step length, orthogonal neighbours that must be free for a diagonal)
        moves = ((1, res, 0, 0), (-1, res, 0, 0), (w, res, 0, 0), (-w, res, 0, 0),
                 (w + 1, diag, w, 1), (w - 1, diag, w, -1), (-w + 1, diag, -w, 1), (-w - 1, diag, -w, -1))
        inf = math.inf
        g = {start: 0.0}
        parent = {start: -1}
        closed = set()
        k = SQRT2 - 2.0

        def h(i: int) -> float:
            r, c = divmod(i, w)
            dr, dc = abs(r - gr), abs(c - gc)
            return res * (dr + dc + k * (dr if dr < dc else dc))

        heap = [(h(start), 0.0, start)]
        expansions = 0
        limit = self.max_expansions or 1 << 62
        push, pop = heapq.heappush, heapq.heappop
        while heap:
            f, gi, i = pop(heap)
            if i in closed:
                continue
            if i == goal:
                break
            closed.add(i)
            expansions += 1
            if expansions >= limit:
                return None, inf, expansions
            ci = cost[i]
            for off, step, o1, o2 in moves:
                j = i + off
                cj = cost[j]
                if cj == inf or j in closed:
                    continue
                if o1 and (cost[i + o1] == inf or cost[i + o2] == inf):
                    continue  # no corner cutting
                ng = gi + step * 0.5 * (ci + cj)
                if ng < g.get(j, inf):
                    g[j] = ng
                    parent[j] = i
                    push(heap, (ng + h(j), ng, j))
        else:
            return None, inf, expansions
        out = []
        i = goal
        while i != -1:
            out.append(self._rc(i))
            i = parent[i]
        out.reverse()
        return out, g[goal], expansions

    # ----------------------------------------------------------------------- smoothing
    def segment_cost(self, a: np.ndarray, b: np.ndarray) -> float:
        """Cost of the straight segment a->b (m x cost per m); inf if it crosses a lethal cell."""
        grid = self.costmap.grid
        length = float(math.hypot(b[0] - a[0], b[1] - a[1]))
        n = max(2, int(math.ceil(length / (0.25 * grid.resolution))) + 1)
        t = np.linspace(0.0, 1.0, n)
        r, c = grid.world_to_index(a[0] + t * (b[0] - a[0]), a[1] + t * (b[1] - a[1]))
        padded = self._lethal_padded
        r = np.clip(r + 1, 0, padded.shape[0] - 1)
        c = np.clip(c + 1, 0, padded.shape[1] - 1)
        if padded[r, c].any():
            return math.inf
        cost = self._cost_arr()[r, c]
        return float(cost.mean() * length)

    def _cost_arr(self) -> np.ndarray:
        arr = getattr(self, "_cost_cache", None)
        if arr is None or arr.shape != (self.costmap.grid.height + 2, self._w):
            arr = np.asarray(self._cost_flat).reshape(-1, self._w)
            self._cost_cache = arr
        return arr

    def _shortcut(self, pts: np.ndarray, first: int) -> np.ndarray:
        n = len(pts)
        # cumulative grid-path cost along the vertices
        seg = np.array([self.segment_cost(pts[i], pts[i + 1]) for i in range(n - 1)])
        seg = np.where(np.isfinite(seg), seg, np.hypot(*np.diff(pts, axis=0).T) * 1e3)
        cum = np.concatenate([[0.0], np.cumsum(seg)])
        out = [pts[0]]
        i = 0
        # an escape prefix (start inside the inflation) is kept as is
        while i < first and i < n - 1:
            i += 1
            out.append(pts[i])
        while i < n - 1:
            best = i + 1
            j = i + 2
            while j < n:
                c = self.segment_cost(pts[i], pts[j])
                if c <= (cum[j] - cum[i]) * (1.0 + 1e-9) + 1e-12:
                    best = j
                    j += 1
                elif c == math.inf:
                    break
                else:
                    j += 1
                    if j - best > 8:  # cheaper shortcuts are unlikely further on
                        break
            out.append(pts[best])
            i = best
        return np.asarray(out)


def densify(pts: np.ndarray, spacing: float) -> np.ndarray:
    """Insert points so that consecutive points are at most ``spacing`` apart."""
    pts = np.asarray(pts, float).reshape(-1, 2)
    if len(pts) < 2:
        return pts.copy()
    out = [pts[:1]]
    for a, b in zip(pts[:-1], pts[1:]):
        d = float(math.hypot(*(b - a)))
        k = max(1, int(math.ceil(d / spacing - 1e-9)))
        t = np.arange(1, k + 1)[:, None] / k
        out.append(a + t * (b - a))
    out = np.vstack(out)
    out[-1] = pts[-1]
    return out
