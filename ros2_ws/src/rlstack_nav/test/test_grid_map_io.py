"""Occupancy grid, distance field / inflation, and map_server YAML + PGM round trips."""

import math

import numpy as np
import pytest

from rlstack_nav.grid import CostParams, Costmap, OccupancyGrid, distance_field, points_to_mask
from rlstack_nav.home_map import home_map, map_from_boxes
from rlstack_nav.map_io import MapFormatError, image_to_occupancy, load_map, read_pgm, save_map, write_pgm


def brute_distance(obstacles, res):
    rr, cc = np.nonzero(obstacles)
    out = np.full(obstacles.shape, np.inf)
    for r in range(obstacles.shape[0]):
        for c in range(obstacles.shape[1]):
            if len(rr):
                out[r, c] = np.min(np.hypot(rr - r, cc - c)) * res
    return out


def test_distance_field_is_exact_up_to_the_cap():
    rng = np.random.default_rng(3)
    obs = rng.random((23, 31)) < 0.04
    got = distance_field(obs, 0.1, 0.8)
    want = np.minimum(brute_distance(obs, 0.1), 0.8)
    np.testing.assert_allclose(got, want, atol=1e-9)


def test_world_cell_conversions_follow_occupancy_grid_conventions():
    g = OccupancyGrid(np.zeros((4, 6), np.int8), 0.5, (-1.0, 2.0, 0.0))
    r, c = g.world_to_index(-0.99, 2.01)
    assert (int(r), int(c)) == (0, 0)  # cell (0, 0) is at the origin (lower-left)
    r, c = g.world_to_index(1.9, 3.9)
    assert (int(r), int(c)) == (3, 5)
    x, y = g.cell_to_world(3, 5)
    assert (float(x), float(y)) == (1.75, 3.75)
    assert not g.contains_point(-1.01, 2.5) and g.contains_point(1.99, 3.99)
    rot = OccupancyGrid(np.zeros((4, 6), np.int8), 0.5, (0.0, 0.0, math.pi / 2))
    r, c = rot.world_to_index(-0.25, 0.75)  # origin yaw: +x of the grid points along world +y
    assert (int(r), int(c)) == (0, 1)


def test_inflation_marks_cells_within_the_robot_radius_as_lethal():
    g = OccupancyGrid(np.zeros((41, 41), np.int8), 0.05)
    g.data[20, 20] = 100
    cm = Costmap(g, CostParams(robot_radius=0.30, inflation_radius=0.6, cost_weight=2.0, cost_scaling_factor=5.0))
    rr, cc = np.mgrid[0:41, 0:41]
    d = np.hypot(rr - 20, cc - 20) * 0.05
    assert np.array_equal(cm.lethal, d < 0.30 - 1e-9)
    # cost decays from 1 + weight at the radius to 1 beyond the inflation radius
    assert cm.cost[20, 20 + 6] == pytest.approx(1.0 + 2.0)
    assert cm.cost[20, 20 + 10] == pytest.approx(1.0 + 2.0 * math.exp(-5.0 * 0.2))
    assert cm.cost[20, 20 + 13] == 1.0
    assert cm.distance_at(1.0 + 0.025, 1.025) == pytest.approx(0.0)


def test_unknown_cells_are_obstacles_unless_allowed():
    g = OccupancyGrid(np.zeros((10, 10), np.int8), 0.1)
    g.data[5, 5] = -1
    assert Costmap(g, CostParams(robot_radius=0.1, inflation_radius=0.2)).obstacles[5, 5]
    assert not Costmap(g, CostParams(robot_radius=0.1, inflation_radius=0.2, allow_unknown=True)).obstacles[5, 5]


def test_points_to_mask_drops_points_outside():
    g = OccupancyGrid(np.zeros((10, 10), np.int8), 0.1)
    m = points_to_mask(g, np.array([[0.05, 0.15], [5.0, 5.0], [-0.1, 0.0]]))
    assert m.sum() == 1 and m[1, 0]


def test_bad_grids_are_rejected():
    with pytest.raises(ValueError):
        OccupancyGrid(np.zeros((0, 3)), 0.1)
    with pytest.raises(ValueError):
        OccupancyGrid(np.zeros((3, 3)), 0.0)
    with pytest.raises(ValueError):
        OccupancyGrid(np.zeros((3, 3)), 0.1, (math.nan, 0, 0))


# --------------------------------------------------------------------------- map_io
def test_map_round_trip_yaml_pgm(tmp_path):
    data = np.zeros((7, 9), np.int8)
    data[0, 0] = 100      # bottom-left
    data[6, 8] = 100      # top-right
    data[3, 4] = -1
    g = OccupancyGrid(data, 0.05, (-1.25, 0.5, 0.0))
    yml, pgm = save_map(g, tmp_path / "sub" / "m")
    text = yml.read_text()
    assert "image: m.pgm" in text and "negate: 0" in text and "occupied_thresh: 0.65" in text
    back = load_map(yml)
    assert np.array_equal(back.data, data)
    assert back.resolution == 0.05 and back.origin == (-1.25, 0.5, 0.0)
    img = read_pgm(pgm)
    assert img.shape == (7, 9)
    assert img[6, 0] == 0 and img[0, 8] == 0  # PGM rows are top-first: bottom-left pixel is the last row
    assert img[3, 4] == 205 and img[1, 1] == 254


def test_map_server_semantics_negate_thresholds_modes(tmp_path):
    # pixel values: black, dark, mid, light, white (one row)
    img = np.array([[0, 60, 128, 200, 255]], np.uint8)
    p = (255 - img.astype(float)) / 255  # 1.0, 0.765, 0.498, 0.216, 0.0
    tri = image_to_occupancy(img, negate=False, occupied_thresh=0.65, free_thresh=0.25)
    assert tri.tolist() == [[100, 100, -1, 0, 0]]
    neg = image_to_occupancy(img, negate=True, occupied_thresh=0.65, free_thresh=0.25)
    assert neg.tolist() == [[0, 0, -1, 100, 100]]
    # thresholds are inclusive (nav2_map_server): p == occupied_thresh -> occupied
    exact = image_to_occupancy(np.array([[51]], np.uint8), False, 0.8, 0.1)
    assert exact.tolist() == [[100]]
    scale = image_to_occupancy(img, False, 0.65, 0.25, mode="scale")
    assert scale[0, 2] == round(99 * (p[0, 2] - 0.25) / 0.4)
    assert scale[0, 0] == 100 and scale[0, 4] == 0
    raw = image_to_occupancy(np.array([[0, 50, 100, 101, 255]], np.uint8), False, 0.65, 0.25, mode="raw")
    assert raw.tolist() == [[0, 50, 100, -1, -1]]
    # through a file, with origin, resolution and negate read from the YAML
    write_pgm(tmp_path / "n.pgm", img)
    (tmp_path / "n.yaml").write_text("image: n.pgm\nresolution: 0.1\norigin: [1.0, -2.0, 0.0]\n"
                                     "negate: 1\noccupied_thresh: 0.65\nfree_thresh: 0.25\n")
    g = load_map(tmp_path / "n.yaml")
    assert g.data.tolist() == [[0, 0, -1, 100, 100]]
    assert g.origin == (1.0, -2.0, 0.0) and g.resolution == 0.1
    x, y = g.cell_to_world(0, 4)
    assert (float(x), float(y)) == pytest.approx((1.45, -1.95))


def test_ascii_pgm_with_comments_and_16_bit(tmp_path):
    (tmp_path / "a.pgm").write_bytes(b"P2\n# comment\n3 1\n# another\n15\n0 15 7\n")
    assert read_pgm(tmp_path / "a.pgm").tolist() == [[0, 255, 119]]
    data = np.array([[0, 65535]], ">u2").tobytes()
    (tmp_path / "b.pgm").write_bytes(b"P5 2 1 65535\n" + data)
    assert read_pgm(tmp_path / "b.pgm").tolist() == [[0, 255]]


@pytest.mark.parametrize("text, msg", [
    ("resolution: 0.1\norigin: [0, 0, 0]\n", "missing"),
    ("image: x.pgm\nresolution: 0.1\norigin: [0, 0]\n", "origin"),
    ("image: x.pgm\nresolution: -1\norigin: [0, 0, 0]\n", "resolution"),
    ("image: nothere.pgm\nresolution: 0.1\norigin: [0, 0, 0]\n", "not found"),
    ("image: x.pgm\nresolution: 0.1\norigin: [0, 0, 0]\nmode: weird\n", "mode"),
    ("[1, 2", "invalid YAML"),
])
def test_bad_map_files_raise_with_reason(tmp_path, text, msg):
    write_pgm(tmp_path / "x.pgm", np.zeros((2, 2), np.uint8))
    (tmp_path / "m.yaml").write_text(text)
    with pytest.raises(MapFormatError, match=msg):
        load_map(tmp_path / "m.yaml")


def test_not_a_pgm(tmp_path):
    (tmp_path / "x.pgm").write_bytes(b"\x89PNG....")
    with pytest.raises(MapFormatError, match="not a PGM"):
        read_pgm(tmp_path / "x.pgm")


# -------------------------------------------------------------------------- home map
class Box:
    def __init__(self, x0, x1, y0, y1, h=1.0):
        self.x_min, self.x_max, self.y_min, self.y_max, self.height = x0, x1, y0, y1, h


def test_map_from_boxes_rasterises_and_leaves_unknown_margin():
    g = map_from_boxes([Box(0.0, 2.0, 0.0, 0.1), Box(0.5, 0.7, 0.5, 0.7), Box(1.0, 1.2, 1.0, 1.2, h=0.01)],
                       resolution=0.1, margin=0.2, min_height=0.05)
    assert g.origin[:2] == pytest.approx((-0.2, -0.2))
    assert g.data[0, 0] == -1                       # margin
    assert g.data[2, 2] == 100                      # wall cell (0.0..0.1, 0.0..0.1)
    r, c = g.world_to_index(0.6, 0.6)
    assert g.data[r, c] == 100
    r, c = g.world_to_index(0.45, 0.45)
    assert g.data[r, c] == 0
    assert not g.contains_point(1.1, 1.1)           # lower than min_height: ignored (not even in the extent)


def test_home_map_matches_the_scene_and_the_committed_file(tmp_path):
    g = home_map()
    assert g.resolution == 0.05
    for x, y, occ in [(0.0, 0.0, False), (2.2, 1.6, True), (-3.0, -0.8, True), (4.05, 0.0, True),
                      (0.8, 2.4, True), (3.5, 2.5, False)]:
        r, c = g.world_to_index(x, y)
        assert (g.data[r, c] == 100) == occ, (x, y)
    yml, _ = save_map(g, tmp_path / "home")
    assert np.array_equal(load_map(yml).data, g.data)
