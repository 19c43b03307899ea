"""The localizer node's core (LocalizerNodeCore) without ROS: odometry history, initial pose,
input checks, state text and diagnostics, on the real home map."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from rlstack_localization.core import Localizer, LocalizerParams
from rlstack_localization.node_core import LocalizerNodeCore, LocalizerOutputs
from rlstack_nav.map_io import load_map

MAP = Path(__file__).resolve().parents[4] / "maps" / "home.yaml"
Q0 = (0.0, 0.0, 0.0, 1.0)


class Outputs(LocalizerOutputs):
    def __init__(self):
        self.calls = []

    def state(self, text):
        self.calls.append(("state", text))

    def transform(self):
        self.calls.append(("transform",))

    def pose(self, result, stamp):
        self.calls.append(("pose", stamp))


@pytest.fixture(scope="module")
def grid():
    return load_map(MAP)


def make(grid, initial=(0.5, -0.5, 0.3)):
    params = LocalizerParams()
    out, info, warning = Outputs(), [], []
    core = LocalizerNodeCore(Localizer(grid, params), params, grid.resolution, "map", "base_link", 10.0, initial,
                             out, info.append, warning.append)
    return core, out, info, warning


def test_initial_pose_from_parameters_waits_for_odometry(grid):
    core, out, info, warning = make(grid)
    core.publish_state()
    assert out.calls == [("state", core.state_text())] and core.loc.map_to_odom is None
    core.odometry(1.0, 0.0, 0.1, Q0, 10.0)
    assert info[-1] == "initial pose (0.500, -0.500, 0.300) from parameters" and out.calls[-1] == ("transform",)
    assert core.loc.map_to_odom is not None and core.pending_initial is None


def test_initialpose_checks(grid):
    core, out, info, warning = make(grid, initial=None)
    core.initial_pose("odom", 0, 0, 0, Q0, [0.0] * 36)
    core.initial_pose("map", math.nan, 0, 0, Q0, [0.0] * 36)
    core.initial_pose("map", 0, 0, 0, (0, 0, 0, 0), [0.0] * 36)
    assert core.rejected == {"initialpose.wrong_frame": 1, "initialpose.non_finite": 1,
                             "initialpose.zero_quaternion": 1}
    cov = np.diag([0.04, 0.04, 0, 0, 0, 0.01]).ravel()
    core.initial_pose("/map", 0.2, 0.1, 0, Q0, cov)   # before odometry: held
    assert core.pending_initial[2] == "/initialpose" and core.pending_initial[1].shape == (3, 3)
    core.odometry(0.0, 0.0, 0.0, Q0, 1.0)
    assert info[-1].endswith("from /initialpose")


def test_odometry_history_interpolates_and_restarts_when_time_goes_back(grid):
    core, *_ = make(grid)
    core.odometry(0.0, 0.0, 0.1, Q0, 1.0)
    core.odometry(1.0, 2.0, 0.1, (0, 0, math.sin(0.5), math.cos(0.5)), 2.0)
    assert core.odom_at(1.5) == pytest.approx((0.5, 1.0, 0.5))
    assert core.odom_at(0.0) == (0.0, 0.0, 0.0) and core.odom_at(9.0)[0] == 1.0
    core.odometry(math.inf, 0.0, 0.0, Q0, 3.0)
    assert core.rejected == {"odom.non_finite": 1}
    core.odometry(5.0, 5.0, 0.1, Q0, 0.5)
    assert list(core.odom_history) == [(0.5, (5.0, 5.0, 0.0))]


def test_depth_frames_are_checked(grid):
    core, out, info, warning = make(grid)
    core.set_camera([math.nan] * 9)
    assert core.rejected == {"camera_info.bad_intrinsics": 1}
    core.set_camera([100.0, 0, 40, 0, 100.0, 30, 0, 0, 1])
    core.odometry(0.0, 0.0, 0.1, Q0, 1.0)
    depth = np.ones((60, 80), np.float32).tobytes()
    core.depth(1.0, "stamp", "cam", "16UC1", 80, 60, 320, False, depth)
    core.depth(1.0, "stamp", "cam", "32FC1", 80, 60, 320, False, depth[:100])
    core.depth(1.0, "stamp", "cam", "32FC1", 80, 60, 320, False, depth)
    assert core.rejected["depth.encoding"] == 1 and core.rejected["depth.size"] == 1
    assert core.rejected["depth.no_transform"] == 1 and core.updates == 0
    state, message, values = core.diagnostics()
    assert values["rejected_total"] == "4" and values["updates"] == "0" and state == core.loc.state
    assert message == core.state_text() and "map_to_odom" in values
    assert len(warning) == 4   # one per kind


def test_a_frame_is_matched_and_published(grid):
    core, out, info, warning = make(grid, initial=(0.0, 0.0, 0.6))
    core.set_camera([100.0, 0, 40, 0, 100.0, 30, 0, 0, 1])
    m = np.eye(4)
    m[:3, :3] = [[0, 0, 1], [-1, 0, 0], [0, -1, 0]]   # optical z forward
    m[:3, 3] = (0.1, 0.0, 1.0)
    core.static_transform("base_link", "cam", m)
    core.odometry(0.0, 0.0, 0.1, Q0, 1.0)
    core.depth(1.0, "stamp", "cam", "32FC1", 80, 60, 320, False, np.full((60, 80), 2.0, np.float32).tobytes())
    assert core.updates == 1 and core.last_result.points > 0   # a wall 2 m ahead: scan points
    assert core.last_state_text == core.state_text()
    assert core.last_result.pose is not None and out.calls[-1] == ("pose", "stamp")   # stamped as the image
    core.depth(1.05, "stamp", "cam", "32FC1", 80, 60, 320, False, b"")   # within 1 / update_rate: skipped
    assert core.updates == 1 and "depth.size" not in core.rejected


def test_a_respawned_localiser_resumes_from_the_saved_map_to_odom(grid):
    """A localiser that died and was started again goes on from the last saved map -> odom: the
    robot kept driving on odometry meanwhile, so its map pose is that correction after the odometry
    of now. A saved state from later odometry (another run, a reset) is ignored: parameters win."""
    core, out, info, warning = make(grid)
    core.resume((0.1, -0.2, 0.05), 50.0, "last pose file f")
    core.odometry(2.0, 1.0, 0.1, Q0, 60.0)
    x, y, yaw = core.loc.map_to_odom
    assert (round(x, 6), round(y, 6), round(yaw, 6)) == (0.1, -0.2, 0.05)
    assert info[-1].endswith("from last pose file f") and core.pending_initial is None
    pose = core.loc.pose((2.0, 1.0, 0.0))
    assert math.isclose(pose[0], 0.1 + math.cos(0.05) * 2.0 - math.sin(0.05) * 1.0, abs_tol=1e-9)

    core, out, info, warning = make(grid)
    core.resume((0.1, -0.2, 0.05), 50.0, "last pose file f")
    core.odometry(0.0, 0.0, 0.1, Q0, 3.0)      # time went back: a new run
    assert "ignored" in info[-2] and info[-1] == "initial pose (0.500, -0.500, 0.300) from parameters"
    core.resume((math.nan, 0.0, 0.0), 1.0, "last pose file f")
    assert core.rejected == {"last_pose.non_finite": 1}


def test_last_pose_file_round_trip_age_and_garbage(tmp_path):
    import json
    import os
    import time

    from rlstack_localization import last_pose

    path = str(tmp_path / "last.json")
    assert last_pose.load(path, 60.0) == (None, "")
    last_pose.save(path, (1.0, 2.0, 0.5), 12.5)
    assert last_pose.load(path, 60.0) == (((1.0, 2.0, 0.5), 12.5), "")
    data = json.loads(open(path).read())
    data["wall_time"] = time.time() - 120
    open(path, "w").write(json.dumps(data))
    saved, why = last_pose.load(path, 60.0)
    assert saved is None and "old" in why
    open(path, "w").write('{"map_to_odom": [1, 2')        # truncated mid-write by hand
    saved, why = last_pose.load(path, 60.0)
    assert saved is None and why.startswith("unreadable")
    last_pose.remove(path)
    assert not os.path.exists(path)
