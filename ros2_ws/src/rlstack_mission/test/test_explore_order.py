"""Where exploring looks first: the waypoints in the order that sees the supports soonest, no turn
to a waypoint's listed heading, and one look-around sweep that ends facing the next waypoint."""

import math
from pathlib import Path

import numpy as np
import pytest
import yaml
from test_fetch_core import ScriptedRobot

from rlstack_mission.explore import _sweep
from rlstack_mission.fetch import FetchMission
from rlstack_mission.layouts import TABLES
from rlstack_mission.mission_types import FetchCode, FetchParams, Pose2D
from rlstack_mission.viewpoints import (
    LOOK_AROUND_COST_M,
    discovery_order,
    sees_support,
    support_boxes,
    tour_order,
)
from rlstack_nav.map_io import load_map

HOME = Path(__file__).resolve().parents[4] / "maps" / "home.yaml"
MISSION_YAML = Path(__file__).resolve().parents[4] / "launch" / "params" / "mission.yaml"
#: the home's waypoints as launch/params/mission.yaml lists them
_FLAT = yaml.safe_load(MISSION_YAML.read_text())["/**"]["ros__parameters"]["explore_waypoints"]
WAYPOINTS = [tuple(_FLAT[i:i + 3]) for i in range(0, len(_FLAT), 3)]


@pytest.fixture(scope="module")
def home():
    g = load_map(HOME)
    return g.occupied_mask(), g.resolution, g.origin[:2]


def _sees(home, params=FetchParams()):
    mask, res, origin = home
    boxes = support_boxes(mask, res, origin, params)
    return boxes, [[j for j, b in enumerate(boxes) if sees_support(mask, res, origin, (w[0], w[1]), b,
                                                                    params.waypoint_view_range)]
                   for w in WAYPOINTS]


def _first_seen(order, sees):
    """For each support, how many waypoints of ``order`` are visited until one sees it."""
    first = {}
    for n, k in enumerate(order, start=1):
        for j in sees[k]:
            first.setdefault(j, n)
    return first


def test_the_home_tables_are_seen_by_the_third_waypoint_and_the_empty_centre_comes_later(home):
    boxes, sees = _sees(home)
    tables = [j for j, (x0, y0, x1, y1) in enumerate(boxes)
              if any(x0 <= cx <= x1 and y0 <= cy <= y1 for cx, cy, _, _ in TABLES.values())]
    assert len(tables) == 3 and len(boxes) == 5    # three tables, the cabinet, the crate
    assert sees[0] == []                           # the home's centre: every support 2-3 m away
    order = discovery_order((0.0, 0.0), [w[:2] for w in WAYPOINTS], sees)
    first = _first_seen(order, sees)
    assert max(first[j] for j in tables) <= 3
    assert order.index(0) > max(first.values()) - 1   # the centre's look after every support is seen
    shortest = tour_order((0.0, 0.0), [w[:2] for w in WAYPOINTS])
    assert max(_first_seen(shortest, sees)[j] for j in tables) >= 4   # the tour it replaces


def test_discovery_order_minimises_the_mean_wait_for_a_support():
    # two points on a line, each sees one support: the near one first, whatever the tour length says
    points = [(1.0, 0.0), (5.0, 0.0), (-3.0, 0.0)]
    sees = [[0], [1], []]
    order = discovery_order((0.0, 0.0), points, sees)
    assert order[:2] == [0, 1] and order[2] == 2
    # one point 1 m out seeing both supports beats two at 0.5 m seeing one each: with a look around
    # costing LOOK_AROUND_COST_M (1.5 m), both are seen at 2.5 m against 2.0 and 4.5 m (mean 3.25)
    assert LOOK_AROUND_COST_M == 1.5
    assert discovery_order((0.0, 0.0), [(0.5, 0.0), (-0.5, 0.0), (1.0, 0.0)], [[0], [1], [0, 1]])[0] == 2
    assert discovery_order((0.0, 0.0), [], []) == []


def test_a_wall_between_hides_a_support():
    res, origin = 0.05, (0.0, 0.0)
    mask = np.zeros((60, 100), bool)
    mask[20:30, 70:80] = True            # a table at x 3.5..4.0, y 1.0..1.5
    box = (3.5, 1.0, 4.0, 1.5)
    assert sees_support(mask, res, origin, (2.5, 1.25), box, 1.5)
    assert not sees_support(mask, res, origin, (1.5, 1.25), box, 1.5)   # 2 m: out of range
    mask[:, 60] = True                   # a wall at x = 3.0
    assert not sees_support(mask, res, origin, (2.5, 1.25), box, 1.5)


def test_the_sweep_ends_facing_where_exploring_goes_next():
    base = Pose2D(0.0, 0.0, 0.0)
    sweep = 1.5 * math.pi
    assert _sweep(base, sweep, (0.0, 2.0)) == pytest.approx(-sweep)    # north: clockwise 270 deg ends at +90
    assert _sweep(base, sweep, (0.0, -2.0)) == pytest.approx(sweep)    # south: counter-clockwise ends at -90
    assert _sweep(base, sweep, None) == pytest.approx(sweep)


class _TurnRecorder(ScriptedRobot):
    def __init__(self, home, **kw):
        super().__init__(home, **kw)
        self.turns, self.tolerances = [], []

    def turn(self, angle, until=None):
        self.turns.append(angle)
        return super().turn(angle, until)

    def navigate(self, pose, until=None, yaw_tolerance=0.0):
        self.tolerances.append(yaw_tolerance)
        return super().navigate(pose, until, yaw_tolerance)


def test_waypoints_are_reached_at_any_heading_and_looked_around_from_in_one_sweep(home):
    robot = _TurnRecorder(home, found_after_queries=4)   # named after the second waypoint's sweep
    p = FetchParams(explore_waypoints=[(1.2, -0.8, 0.0), (3.0, 0.2, 0.0)], support_looks=False,
                    look_while_driving=False, look_around_yaws=4)
    r = FetchMission(robot, p, robot_radius=0.5).run("the yellow cube", Pose2D(-0.6, 0.0, math.pi))
    assert r.code == FetchCode.SUCCEEDED, r.reason
    explore_goals = robot.tolerances[:2]
    assert all(t >= math.pi for t in explore_goals)       # the listed yaw is not driven to
    assert all(t == 0.0 for t in robot.tolerances[2:])    # staging, docking, drop-off: their heading
    assert [abs(a) for a in robot.turns[:2]] == pytest.approx([1.5 * math.pi] * 2)


def test_with_no_support_in_view_the_order_is_the_shortest_tour():
    points = [(3.0, 0.0), (1.0, 0.0), (2.0, 1.0), (-1.0, 0.0)]
    assert discovery_order((0.0, 0.0), points, [[], [], [], []]) == tour_order((0.0, 0.0), points)
