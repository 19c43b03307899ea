"""The overhead renderer (pose -> pixel, map orientation) and the video helpers (layout, mp4)."""

import math

import imageio.v2 as imageio
import numpy as np
import pytest

from rlstack_mission import overhead
from rlstack_mission.overhead import OverheadView, occupancy_colors, render_overhead
from rlstack_mission.video import Mp4Writer, pad_to_even, side_by_side

# A 3.2 m x 2.4 m map at 5 cm (64 x 48 cells) drawn into 320 x 240 pixels with no bars and no
# margin: exactly 100 pixels per metre, so every expected pixel below is plain arithmetic.
RES = 0.05
ROWS, COLS = 48, 64
ORIGIN = (-1.0, -0.5)


def plain_view(grid=None, **kwargs):
    grid = np.zeros((ROWS, COLS), np.int8) if grid is None else grid
    return OverheadView(grid, RES, ORIGIN, (320, 240), title_height=0, margin=0, **kwargs)


def color(image, u, v):
    return tuple(int(c) for c in image[int(math.floor(v)), int(math.floor(u))])


def test_world_to_pixel_is_x_right_y_up_at_the_expected_scale():
    view = plain_view()
    assert view.scale == pytest.approx(100.0)
    # the map's lower-left corner is the image's bottom-left, its upper-right the top-right
    assert view.world_to_pixel(-1.0, -0.5) == pytest.approx((0.0, 240.0))
    assert view.world_to_pixel(2.2, 1.9) == pytest.approx((320.0, 0.0))
    assert view.world_to_pixel(0.0, 0.0) == pytest.approx((100.0, 190.0))
    assert view.pixel_to_world(100.0, 190.0) == pytest.approx((0.0, 0.0))


@pytest.mark.parametrize("x, y", [(0.0, 0.0), (1.5, 1.2), (-0.6, -0.2), (2.0, 1.7)])
def test_the_robot_is_drawn_at_its_pose(x, y):
    view = plain_view()
    radius = 0.15  # 15 px
    image = view.render(robot=(x, y, 0.0), robot_radius=radius)
    u, v = 100.0 + 100.0 * x, 190.0 - 100.0 * y
    # yaw 0: the heading line points to +x (right); behind the centre is the robot's body
    assert color(image, u + 9, v) == overhead.HEADING
    assert color(image, u - 9, v) == overhead.ROBOT
    assert color(image, u, v + 9) == overhead.ROBOT
    # just outside the footprint: the free-space colour of the map
    assert color(image, u - 18, v) == overhead.FREE
    assert color(image, u, v - 18) == overhead.FREE


def test_the_heading_follows_yaw_with_y_up():
    view = plain_view()
    u, v = view.world_to_pixel(1.0, 1.0)
    up = view.render(robot=(1.0, 1.0, math.pi / 2), robot_radius=0.15)
    assert color(up, u, v - 9) == overhead.HEADING          # +y is up in the picture
    assert color(up, u, v + 9) == overhead.ROBOT
    left = view.render(robot=(1.0, 1.0, math.pi), robot_radius=0.15)
    assert color(left, u - 9, v) == overhead.HEADING
    assert color(left, u + 9, v) == overhead.ROBOT


def test_map_orientation_row_zero_is_the_bottom_and_col_zero_the_left():
    grid = np.zeros((ROWS, COLS), np.int8)
    grid[0, 0] = 100            # lowest y, lowest x  -> bottom-left
    grid[ROWS - 1, COLS - 1] = 100   # highest y, highest x -> top-right
    grid[ROWS - 1, 0] = -1       # highest y, lowest x -> top-left, unknown
    grid[10, 20] = 50            # a probability in between
    image = plain_view(grid).render()
    cell = 5  # pixels per cell
    assert color(image, 2, 240 - 2) == overhead.OCCUPIED
    assert color(image, 320 - 2, 2) == overhead.OCCUPIED
    assert color(image, 2, 2) == overhead.UNKNOWN
    assert color(image, 320 - 2, 240 - 2) == overhead.FREE
    # cell (row 10, col 20): x in [0.0, 0.05), y in [0.0, 0.05) -> pixels u 100..105, v 185..190
    mid = color(image, 20 * cell + 2, 240 - 10 * cell - 2)
    assert overhead.OCCUPIED[0] < mid[0] < overhead.FREE[0]
    # a point just outside that cell is free again
    assert color(image, 20 * cell + 7, 240 - 10 * cell - 2) == overhead.FREE


def test_markers_path_and_target_are_drawn_where_they_are():
    view = plain_view()
    image = view.render(
        path=[(0.0, 0.0), (1.0, 0.0)],
        objects=[(1.5, 1.5, "", (255, 220, 0))],
        target=(-0.5, 1.0),
    )
    assert color(image, 150, 190) == overhead.PATH          # halfway along the path
    assert color(image, 250, 40) == (255, 220, 0)           # the object's square
    u, v = view.world_to_pixel(-0.5, 1.0)
    assert color(image, u + 7, v) == overhead.TARGET        # on the target's ring


def test_title_and_caption_bars_and_output_size():
    grid = np.zeros((ROWS, COLS), np.int8)
    image = render_overhead(grid, RES, ORIGIN, robot=(0, 0, 0), title="fetch", caption="t=1.0 s",
                            size=(480, 360))
    assert image.shape == (360, 480, 3) and image.dtype == np.uint8
    assert color(image, 470, 20) == overhead.BAR            # title bar (24 px)
    assert color(image, 470, 350) == overhead.BAR           # caption bar (20 px)
    # the map keeps its aspect ratio: the 4:3 map in the 468 x 304 area (480 x 360 less the bars
    # and 6 px margins) is limited by the height, 405 px wide, centred
    view = OverheadView(grid, RES, ORIGIN, (480, 360), caption_height=20)
    assert view.scale == pytest.approx(304 / 2.4)
    u0, _ = view.world_to_pixel(-1.0, 0.0)
    u1, _ = view.world_to_pixel(2.2, 0.0)
    assert (u0 + u1) / 2 == pytest.approx(240.0)


def test_rotated_origin_and_fixed_bounds():
    grid = np.zeros((ROWS, COLS), np.int8)
    grid[0, 0] = 100
    # origin yaw 90 deg: the grid's +x (columns) points along world +y
    view = OverheadView(grid, RES, (0.0, 0.0, math.pi / 2), (240, 320), title_height=0, margin=0)
    assert view.bounds == pytest.approx((-2.4, 0.0, 0.0, 3.2))
    u, v = view.world_to_pixel(-0.025, 0.025)   # centre of cell (0, 0)
    assert color(view.render(), u, v) == overhead.OCCUPIED
    fixed = OverheadView(grid, RES, ORIGIN, (200, 200), bounds=(-1, -1, 1, 1), title_height=0, margin=0)
    assert fixed.scale == pytest.approx(100.0)
    assert color(fixed.render(), 5, 195) == overhead.BACKGROUND   # (-0.95, -0.95) is off the map
    assert color(fixed.render(), 5, 5) == overhead.FREE           # (-0.95, 0.95) is on it


def test_occupancy_colors_and_bad_input():
    c = occupancy_colors(np.array([[-1, 0, 100, 127]], np.int8))
    assert [tuple(p) for p in c[0]] == [overhead.UNKNOWN, overhead.FREE, overhead.OCCUPIED, overhead.UNKNOWN]
    with pytest.raises(ValueError):
        OverheadView(np.zeros((0, 3), np.int8), RES)
    with pytest.raises(ValueError):
        OverheadView(np.zeros((3, 3), np.int8), 0.0)


# ---------------------------------------------------------------------------- video
def test_side_by_side_keeps_aspect_and_pads_to_even():
    left = np.full((240, 320, 3), 10, np.uint8)      # 4:3
    right = np.full((360, 480, 3), 200, np.uint8)    # 4:3
    out = side_by_side(left, right, 360)
    assert out.shape == (360, 480 + 480, 3)
    assert out[0, 0, 0] == 10 and out[0, -1, 0] == 200
    odd = side_by_side(np.zeros((100, 101, 3), np.uint8), np.zeros((50, 50, 3), np.uint8), 101)
    assert odd.shape[0] % 2 == 0 and odd.shape[1] % 2 == 0
    assert odd.shape[:2] == (102, 204)   # 101 rows -> 102; widths 102 + 101 = 203 -> 204
    grey = side_by_side(np.zeros((10, 10), np.uint8), np.ones((10, 10, 4), np.float32), 10)
    assert grey.shape == (10, 20, 3) and grey.dtype == np.uint8 and grey[0, -1, 0] == 255
    assert pad_to_even(np.zeros((3, 5, 3), np.uint8)).shape == (4, 6, 3)


def test_mp4_writer_streams_frames_and_renames_at_close(tmp_path):
    path = tmp_path / "out" / "demo.mp4"
    frames = 12
    with Mp4Writer(path, fps=10) as writer:
        for i in range(frames):
            frame = np.zeros((120, 161, 3), np.uint8)    # odd width: padded to 162
            frame[:, : 10 * (i + 1)] = 255
            writer.append(frame)
            assert not path.exists()                      # only renamed into place at close
    assert writer.frame_count == frames
    assert path.is_file()
    assert not [p for p in path.parent.iterdir() if p.name.startswith(".")]   # no temporary left
    reader = imageio.get_reader(str(path))
    try:
        decoded = [f for f in reader]
        fps = reader.get_meta_data()["fps"]
    finally:
        reader.close()
    assert len(decoded) == frames
    assert decoded[0].shape == (120, 162, 3)
    assert fps == pytest.approx(10.0)
    # content survives the encoding: the white band grows frame by frame
    assert decoded[0][60, 5].mean() > 200 and decoded[0][60, 100].mean() < 50
    assert decoded[-1][60, 100].mean() > 200


def test_mp4_writer_rejects_size_changes_and_discards_on_error(tmp_path):
    path = tmp_path / "bad.mp4"
    with pytest.raises(ValueError, match="differs"):
        with Mp4Writer(path, fps=5) as writer:
            writer.append(np.zeros((32, 32, 3), np.uint8))
            writer.append(np.zeros((32, 48, 3), np.uint8))
    assert not path.exists()
    assert not list(tmp_path.iterdir())                   # the partial video was removed
    with pytest.raises(ValueError, match="no frames"):
        Mp4Writer(tmp_path / "empty.mp4", fps=5).close()


def test_labels_never_overlap_and_the_highlighted_one_is_always_placed():
    """No 'yellow ballnder': a ball's and a cylinder's labels drawn over each other."""
    grid = np.zeros((80, 100), np.int8)
    view = OverheadView(grid, 0.05, (0.0, 0.0), size=(480, 360), caption_height=20)
    names = [f"{c} {k}" for c in ("red", "green", "blue", "yellow") for k in ("cube", "ball", "cylinder")]
    # twelve objects within 10 cm of each other (a cluttered table), the target listed last
    rng = np.random.default_rng(0)
    objects = [(2.5 + rng.uniform(-0.05, 0.05), 2.0 + rng.uniform(-0.05, 0.05), n, (200, 200, 200)) for n in names]
    view.render(robot=(2.4, 2.0, 0.0), objects=objects, target=(2.6, 2.1, "drop-off"), highlight="yellow cylinder")
    placed = dict(view.last_labels)
    assert "yellow cylinder" in placed
    boxes = list(placed.values())
    for i, a in enumerate(boxes):
        assert view.title_height <= a[1] and a[3] <= view.height - view.caption_height
        assert 0 <= a[0] and a[2] <= view.width
        for b in boxes[i + 1:]:
            assert not (a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]), (a, b)
    assert len(placed) >= 8  # most labels find a place; none is drawn over another


def test_place_labels_gives_up_rather_than_overlap():
    from rlstack_mission.overhead import place_labels

    # three wide labels on one point: room for two (above and below it), none for the third
    boxes = place_labels([(200, 200)] * 3, [(380, 100)] * 3, area=(0, 0, 400, 400))
    assert boxes[0] is not None and boxes[1] is not None and boxes[2] is None
    assert boxes[0][3] <= boxes[1][1]  # one above the other, not overlapping
