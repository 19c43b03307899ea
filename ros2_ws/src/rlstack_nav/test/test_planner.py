"""A* planner: optimality on small grids, inflation, unreachable / occupied / outside goals."""

import heapq
import math

import numpy as np
import pytest

from rlstack_nav.grid import CostParams, Costmap, OccupancyGrid
from rlstack_nav.planner import FailureKind, GridPlanner, densify, path_length


def dijkstra(cost, start, goal, res):
    """Reference: 8-connected Dijkstra with the planner's move cost and corner rule."""
    h, w = cost.shape
    dist = {start: 0.0}
    heap = [(0.0, start)]
    while heap:
        d, (r, c) = heapq.heappop(heap)
        if (r, c) == goal:
            return d
        if d > dist[(r, c)]:
            continue
        for dr in (-1, 0, 1):
            for dc in (-1, 0, 1):
                if dr == dc == 0:
                    continue
                rr, cc = r + dr, c + dc
                if not (0 <= rr < h and 0 <= cc < w) or not np.isfinite(cost[rr, cc]):
                    continue
                if dr and dc and (not np.isfinite(cost[r + dr, c]) or not np.isfinite(cost[r, c + dc])):
                    continue
                nd = d + res * math.hypot(dr, dc) * 0.5 * (cost[r, c] + cost[rr, cc])
                if nd < dist.get((rr, cc), math.inf):
                    dist[(rr, cc)] = nd
                    heapq.heappush(heap, (nd, (rr, cc)))
    return math.inf


def open_grid(h=20, w=30, res=0.1):
    return OccupancyGrid(np.zeros((h, w), np.int8), res)


def cell_centre(g, r, c):
    x, y = g.cell_to_world(r, c)
    return float(x), float(y)


@pytest.mark.parametrize("seed", range(6))
def test_astar_cost_is_optimal_on_random_grids(seed):
    rng = np.random.default_rng(seed)
    g = OccupancyGrid(np.where(rng.random((16, 22)) < 0.25, 100, 0).astype(np.int8), 0.1)
    cm = Costmap(g, CostParams(robot_radius=0.0, inflation_radius=0.3, cost_weight=1.5, cost_scaling_factor=4.0))
    free = np.argwhere(~cm.lethal)
    planner = GridPlanner(cm, smooth=False, densify=0.0)
    for _ in range(5):
        (r0, c0), (r1, c1) = free[rng.integers(len(free), size=2)]
        want = dijkstra(cm.cost, (r0, c0), (r1, c1), 0.1)
        res = planner.plan(cell_centre(g, r0, c0), cell_centre(g, r1, c1))
        if math.isinf(want):
            assert not res.ok and res.failure == FailureKind.NO_PATH
        else:
            assert res.ok and res.cost == pytest.approx(want, rel=1e-9, abs=1e-12)


def test_straight_and_diagonal_paths_in_open_space():
    g = open_grid()
    planner = GridPlanner(Costmap(g, CostParams(robot_radius=0.0, inflation_radius=0.0)), densify=0.0)
    res = planner.plan((0.05, 0.05), (2.05, 0.05))
    assert res.ok and res.length == pytest.approx(2.0)
    res = planner.plan((0.05, 0.05), (1.55, 1.55))
    assert res.ok and res.length == pytest.approx(1.5 * math.sqrt(2))
    # any-angle shortcut: a knight-like move is a straight segment, shorter than the grid path
    res = planner.plan((0.05, 0.05), (2.05, 1.05))
    assert res.ok and len(res.path) == 2 and res.length == pytest.approx(math.hypot(2, 1))
    assert res.grid_length > res.length


def test_path_keeps_out_of_the_inflated_obstacles_and_goes_around_a_wall():
    g = open_grid(40, 40, 0.05)
    g.data[0:30, 20] = 100  # wall from the bottom, gap at the top
    cm = Costmap(g, CostParams(robot_radius=0.2, inflation_radius=0.4, cost_weight=1.0))
    planner = GridPlanner(cm, densify=0.02)
    res = planner.plan((0.3, 0.3), (1.7, 0.3))
    assert res.ok
    r, c = g.world_to_index(res.path[:, 0], res.path[:, 1])
    assert not cm.lethal[r, c].any()
    assert res.path[:, 1].max() > 1.5 + 0.2  # went over the top of the wall
    assert np.all(np.hypot(*np.diff(res.path, axis=0).T) <= 0.02 + 1e-9)
    assert tuple(res.path[0]) == (0.3, 0.3) and tuple(res.path[-1]) == (1.7, 0.3)


def test_cost_weight_pushes_the_path_away_from_walls():
    g = open_grid(40, 60, 0.05)
    g.data[19, 10:50] = 100  # a thin wall along the middle, robot travels beside it
    near = GridPlanner(Costmap(g, CostParams(robot_radius=0.1, inflation_radius=0.8, cost_weight=0.0)), densify=0.05)
    far = GridPlanner(Costmap(g, CostParams(robot_radius=0.1, inflation_radius=0.8, cost_weight=5.0,
                                            cost_scaling_factor=3.0)), densify=0.05)
    a = near.plan((0.2, 1.1), (2.8, 1.1))
    b = far.plan((0.2, 1.1), (2.8, 1.1))
    wall_y = 19.5 * 0.05
    assert a.ok and b.ok
    assert np.max(b.path[:, 1] - wall_y) > np.max(a.path[:, 1] - wall_y)


def test_unreachable_goal_reports_no_path_quickly():
    g = open_grid(60, 60, 0.05)
    g.data[:, 30] = 100  # the map is cut in two
    planner = GridPlanner(Costmap(g, CostParams(robot_radius=0.1, inflation_radius=0.2)))
    res = planner.plan((0.5, 1.5), (2.5, 1.5))
    assert not res.ok and res.failure == FailureKind.NO_PATH
    assert "not connected" in res.reason and res.time_s < 1.0


def test_goal_in_obstacle_too_close_or_outside():
    g = open_grid(40, 40, 0.05)
    g.data[20, 20] = 100
    planner = GridPlanner(Costmap(g, CostParams(robot_radius=0.2, inflation_radius=0.3)))
    res = planner.plan((0.2, 0.2), (1.025, 1.025))
    assert not res.ok and res.failure == FailureKind.GOAL_OCCUPIED and "inside an obstacle" in res.reason
    res = planner.plan((0.2, 0.2), (1.125, 1.025))
    assert not res.ok and res.failure == FailureKind.GOAL_OCCUPIED and "closer than the robot radius" in res.reason
    res = planner.plan((0.2, 0.2), (5.0, 1.0))
    assert not res.ok and res.failure == FailureKind.OUTSIDE_MAP and "outside the map" in res.reason
    res = planner.plan((0.2, 0.2), (math.nan, 1.0))
    assert not res.ok and res.failure == FailureKind.OUTSIDE_MAP
    g.data[10, 10] = -1
    planner = GridPlanner(Costmap(g, CostParams(robot_radius=0.2, inflation_radius=0.3)))
    res = planner.plan((0.2, 0.2), (0.525, 0.525))
    assert not res.ok and "unknown space" in res.reason


def test_start_inside_inflation_escapes_but_not_inside_an_obstacle():
    g = open_grid(40, 40, 0.05)
    g.data[:, 0] = 100
    planner = GridPlanner(Costmap(g, CostParams(robot_radius=0.3, inflation_radius=0.4)))
    res = planner.plan((0.15, 1.0), (1.5, 1.0))  # 0.125 m from the wall, radius 0.3
    assert res.ok and tuple(res.path[0]) == (0.15, 1.0)
    res = planner.plan((0.02, 1.0), (1.5, 1.0))
    assert not res.ok and res.failure == FailureKind.START_OCCUPIED


def test_200x200_grid_plans_fast():
    rng = np.random.default_rng(0)
    g = OccupancyGrid(np.zeros((200, 200), np.int8), 0.05)
    for _ in range(40):
        r, c = rng.integers(0, 190, size=2)
        g.data[r:r + 10, c:c + 4] = 100
    cm = Costmap(g, CostParams(robot_radius=0.1, inflation_radius=0.3))
    res = GridPlanner(cm).plan(cell_centre(g, 3, 3), cell_centre(g, 196, 196))
    assert res.ok and res.time_s < 2.0


def test_densify_and_length():
    pts = densify(np.array([[0.0, 0.0], [1.0, 0.0], [1.0, 0.25]]), 0.1)
    assert path_length(pts) == pytest.approx(1.25)
    assert np.all(np.hypot(*np.diff(pts, axis=0).T) <= 0.1 + 1e-12)
