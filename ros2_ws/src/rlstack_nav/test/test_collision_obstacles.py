"""Path collision check (map + dynamic obstacles) and the depth obstacle layer."""

import math

import numpy as np
import pytest

from rlstack_nav.collision import check_path, point_clearance
from rlstack_nav.grid import CostParams, Costmap, OccupancyGrid
from rlstack_nav.obstacles import CameraModel, ObstacleLayer, ObstacleParams, depth_to_points, quat_to_matrix
from rlstack_nav.planner import densify


def open_costmap(radius=0.3):
    g = OccupancyGrid(np.zeros((60, 100), np.int8), 0.05)  # 5 x 3 m
    return Costmap(g, CostParams(robot_radius=radius, inflation_radius=radius + 0.2))


def straight(x0=0.5, x1=4.5, y=1.5):
    return densify(np.array([[x0, y], [x1, y]]), 0.05)


def test_clear_path_and_obstacle_ahead():
    cm = open_costmap()
    path = straight()
    assert not check_path(cm, path, 0, 2.0).blocked
    obs = np.array([[2.0, 1.5 + 0.25]])  # 25 cm beside the path, radius 30 cm
    res = check_path(cm, path, 0, 2.0, obs)
    assert res.blocked and res.source == "obstacle"
    assert res.distance_along == pytest.approx(2.0 - math.sqrt(0.3 ** 2 - 0.25 ** 2) - 0.5, abs=0.06)
    assert "obstacle seen by the sensors" in res.describe()
    # beyond the checked stretch: not reported
    assert not check_path(cm, path, 0, 0.8, obs).blocked
    # from a later start index: the check follows the robot
    assert not check_path(cm, path, 60, 2.0, obs).blocked
    # far to the side: not blocking
    assert not check_path(cm, path, 0, 2.0, np.array([[2.0, 1.5 + 0.31]])).blocked


def test_map_obstacle_on_the_path_is_reported():
    g = OccupancyGrid(np.zeros((60, 100), np.int8), 0.05)
    g.data[25:35, 60] = 100  # at x = 3.0
    cm = Costmap(g, CostParams(robot_radius=0.3, inflation_radius=0.5))
    res = check_path(cm, straight(), 0, 5.0)
    assert res.blocked and res.source == "map" and res.point[0] == pytest.approx(3.025 - 0.3, abs=0.06)


def test_a_path_out_of_the_lethal_zone_is_not_blocked_one_further_in_is():
    """The robot stands 0.2 m from an obstacle its sensors saw (radius 0.3): the way out is free to
    drive; a path that passes closer than the robot stands now is blocked."""
    g = OccupancyGrid(np.zeros((60, 100), np.int8), 0.05)
    seen = np.zeros((60, 100), bool)
    seen[30, 50] = True
    cm = Costmap(g, CostParams(robot_radius=0.3, inflation_radius=0.5), seen)
    ox, oy = (float(v) for v in g.cell_to_world(30, 50))
    assert cm.is_lethal(ox - 0.2, oy)
    away = straight(ox - 0.2, ox - 2.0, oy)
    assert not check_path(cm, away, 0, 2.0).blocked
    past = densify(np.array([[ox - 0.2, oy], [ox, oy - 0.15], [ox + 1.5, oy - 0.15]]), 0.05)
    res = check_path(cm, past, 0, 2.0)
    assert res.blocked and res.distance_along > 0.0


def test_clearance():
    cm = open_costmap()
    c = point_clearance(cm, 2.5, 1.5)
    # the distance field is exact up to inflation_radius + one cell; farther reads that cap
    assert c == pytest.approx(0.5 + 0.05 - 0.3)
    assert point_clearance(cm, 2.5, 1.5, np.array([[2.9, 1.5]])) == pytest.approx(0.1)


def test_depth_to_points_back_projects_a_floor_and_a_box():
    # camera 1 m above the floor looking straight down (optical z = world -z)
    cam = CameraModel(fx=100.0, fy=100.0, cx=50.0, cy=40.0, width=100, height=80)
    rot = np.array([[1.0, 0, 0], [0, -1.0, 0], [0, 0, -1.0]])
    depth = np.full((80, 100), 1.0, np.float32)
    depth[40, 50] = 0.8          # a 20 cm tall thing under the centre pixel
    depth[0, 0] = np.nan         # no return
    pts = depth_to_points(depth, cam, rot, [2.0, 3.0, 1.0], stride=1)
    assert len(pts) == 80 * 100 - 1
    top = pts[np.argmax(pts[:, 2])]
    assert top == pytest.approx([2.0, 3.0, 0.2])
    corner = depth_to_points(depth[1:2, :1], cam, rot, [0, 0, 1.0], stride=1)
    assert corner[0] == pytest.approx([(0 - 50) / 100.0, -(0 - 40) / 100.0, 0.0])


def test_quat_to_matrix():
    assert quat_to_matrix([0, 0, 0, 1]) == pytest.approx(np.eye(3))
    r = quat_to_matrix([0, 0, math.sin(math.pi / 4), math.cos(math.pi / 4)])
    assert r @ [1, 0, 0] == pytest.approx([0, 1, 0])
    with pytest.raises(ValueError):
        quat_to_matrix([0, 0, 0, 0])


def make_layer(**kw):
    g = OccupancyGrid(np.zeros((60, 100), np.int8), 0.05)
    g.data[:, 99] = 100  # a wall at x = 4.95
    cm = Costmap(g, CostParams(robot_radius=0.3, inflation_radius=0.5))
    return ObstacleLayer(g, cm.distance, ObstacleParams(**kw))


def test_layer_filters_floor_high_points_self_and_static_obstacles():
    layer = make_layer(min_obstacle_height=0.03, max_obstacle_height=1.4, self_filter_radius=0.55)
    pts = np.array([
        [2.0, 1.0, 0.01],    # floor
        [2.0, 1.0, 2.0],     # above the robot
        [1.2, 1.5, 0.3],     # inside the robot's own circle (robot at 1.0, 1.5)
        [4.97, 1.0, 0.5],    # the static wall
        [3.0, 2.0, 0.1],     # a real obstacle
    ])
    assert layer.add_points(pts, now=0.0, robot_xy=(1.0, 1.5)) == 1
    assert layer.count() == 1
    assert layer.points()[0] == pytest.approx([3.025, 2.025])
    assert layer.version == 1
    assert layer.add_points(pts, now=1.0, robot_xy=(1.0, 1.5)) == 0 and layer.version == 1


def test_layer_clears_cells_seen_through_and_expires_old_ones():
    layer = make_layer(persistence=5.0, clear_margin=0.1)
    layer.add_points(np.array([[2.0, 1.5, 0.2]]), now=0.0)
    cam = CameraModel(fx=100.0, fy=100.0, cx=50.0, cy=40.0, width=100, height=80)
    # camera at (0, 1.5, 0.2) looking along +x: optical z = world x, optical x = world -y, optical y = world -z
    rot = np.array([[0, 0, 1.0], [-1.0, 0, 0], [0, -1.0, 0]])
    t = [0.0, 1.5, 0.2]
    far = np.full((80, 100), 4.0, np.float32)
    near = np.full((80, 100), 2.0, np.float32)
    assert layer.clear_seen_through(near, cam, rot, t) == 0  # the obstacle is still seen there
    assert layer.count() == 1
    assert layer.clear_seen_through(far, cam, rot, t) == 1   # now the camera sees past it
    assert layer.count() == 0
    layer.add_points(np.array([[2.0, 1.5, 0.2]]), now=0.0)
    assert layer.expire(4.0) == 0 and layer.expire(5.1) == 1
    # behind the camera / out of view: kept
    layer.add_points(np.array([[2.0, 1.5, 0.2]]), now=10.0)
    assert layer.clear_seen_through(far, cam, rot, [3.0, 1.5, 0.2]) == 0


def test_update_from_depth_marks_a_box_in_front():
    layer = make_layer(stride=1, self_filter_radius=0.3)
    cam = CameraModel(fx=100.0, fy=100.0, cx=50.0, cy=40.0, width=100, height=80)
    rot = np.array([[0, 0, 1.0], [-1.0, 0, 0], [0, -1.0, 0]])
    depth = np.full((80, 100), np.nan, np.float32)
    depth[38:43, 45:56] = 2.0  # a patch 2 m ahead at camera height
    cleared, new = layer.update_from_depth(depth, cam, rot, [0.5, 1.5, 0.3], (0.5, 1.5), now=0.0)
    assert new > 0 and cleared == 0
    pts = layer.points()
    assert np.all(np.abs(pts[:, 0] - 2.5) < 0.06)


def _noisy_floor_view(box: bool, seed: int = 0):
    """A 160x120 depth image from a camera 1.1 m up at (0.2, 1.5), pitched 25 deg down along +x,
    of a flat floor (and, with ``box``, a 6 cm high box 1.5 m ahead), with a D435-like range noise
    sigma = 0.0025 z^2 (sim_bridges.sensor_noise)."""
    cam = CameraModel(fx=140.0, fy=140.0, cx=80.0, cy=60.0, width=160, height=120)
    pitch = math.radians(25.0)
    # optical axes in the world: z forward-down, x = world -y, y = down-ish
    zc = np.array([math.cos(pitch), 0.0, -math.sin(pitch)])
    xc = np.array([0.0, -1.0, 0.0])
    yc = np.cross(zc, xc)
    rot = np.column_stack([xc, yc, zc])
    t = np.array([0.2, 1.5, 1.1])
    v, u = np.mgrid[0:cam.height, 0:cam.width].astype(float)
    rays = np.stack([(u - cam.cx) / cam.fx, (v - cam.cy) / cam.fy, np.ones_like(u)], -1) @ rot.T
    depth = np.where(rays[..., 2] < -1e-6, -t[2] / np.minimum(rays[..., 2], -1e-6), np.nan)   # floor z = 0
    if box:
        top = (t[2] - 0.06) / -np.minimum(rays[..., 2], -1e-6)
        hit = t[0] + top * rays[..., 0]
        y = t[1] + top * rays[..., 1]
        on_box = (hit > 1.7) & (hit < 1.9) & (np.abs(y - 1.5) < 0.1)
        depth = np.where(on_box & (top < depth), top, depth)
    rng = np.random.default_rng(seed)
    depth = depth + rng.standard_normal(depth.shape) * 0.0025 * np.square(np.nan_to_num(depth))
    return depth.astype(np.float32), cam, rot, t


def test_floor_noise_threshold_removes_phantom_floor_obstacles_but_keeps_a_low_box():
    depth, cam, rot, t = _noisy_floor_view(box=False)
    plain = make_layer(stride=2, self_filter_radius=0.3, max_range=4.0)
    plain.update_from_depth(depth, cam, rot, t, (0.2, 1.5), now=0.0)
    assert plain.count() > 0          # the noisy far floor alone makes phantom obstacles at a fixed 3 cm
    aware = make_layer(stride=2, self_filter_radius=0.3, max_range=4.0, floor_noise_per_m2=0.004)
    aware.update_from_depth(depth, cam, rot, t, (0.2, 1.5), now=0.0)
    assert aware.count() == 0
    depth, cam, rot, t = _noisy_floor_view(box=True, seed=1)
    aware.update_from_depth(depth, cam, rot, t, (0.2, 1.5), now=1.0)
    pts = aware.points()
    assert len(pts) > 0 and np.all(np.abs(pts[:, 0] - 1.8) < 0.15) and np.all(np.abs(pts[:, 1] - 1.5) < 0.15)


def _noisy_wall_view(seed: int = 0):
    """A level camera 0.5 m up at (1.9, 1.5) looking along +x at the layer's wall (x = 4.95, 3 m
    ahead), with the D435-like range noise sigma = 0.0025 z^2 (~2 cm at 3 m)."""
    cam = CameraModel(fx=140.0, fy=140.0, cx=80.0, cy=60.0, width=160, height=120)
    rot = np.array([[0, 0, 1.0], [-1.0, 0, 0], [0, -1.0, 0]])   # optical z along world +x
    t = np.array([1.9, 1.5, 0.5])
    v, u = np.mgrid[0:cam.height, 0:cam.width].astype(float)
    rays = np.stack([(u - cam.cx) / cam.fx, (v - cam.cy) / cam.fy, np.ones_like(u)], -1) @ rot.T
    depth = (4.95 - t[0]) / rays[..., 0]       # optical depth = distance along +x to the wall face
    rng = np.random.default_rng(seed)
    depth = depth + rng.standard_normal(depth.shape) * 0.0025 * np.square(depth)
    return depth.astype(np.float32), cam, rot, t


def test_static_noise_margin_removes_phantom_cells_along_a_far_wall():
    """Fetch seed 2 with depth noise: far wall returns fell short of the wall, outside the fixed
    static_margin, and a line of phantom cells blocked a staging pose 0.45 m from the wall."""
    depth, cam, rot, t = _noisy_wall_view()
    plain = make_layer(stride=2, self_filter_radius=0.3, max_range=4.0)
    plain.update_from_depth(depth, cam, rot, t, (1.9, 1.5), now=0.0)
    assert plain.count() > 0 and np.all(plain.points()[:, 0] > 4.7)   # phantoms, all just short of the wall
    aware = make_layer(stride=2, self_filter_radius=0.3, max_range=4.0, static_noise_per_m2=0.01)
    aware.update_from_depth(depth, cam, rot, t, (1.9, 1.5), now=0.0)
    assert aware.count() == 0
    # a real obstacle in front of the wall (a post 0.5 m short of it) is still seen
    depth[:, 70:90] = np.minimum(depth[:, 70:90], 2.55)
    aware.update_from_depth(depth, cam, rot, t, (1.9, 1.5), now=1.0)
    pts = aware.points()
    assert len(pts) > 0 and np.all(np.abs(pts[:, 0] - 4.45) < 0.1)
