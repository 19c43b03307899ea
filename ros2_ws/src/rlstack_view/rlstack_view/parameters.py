"""The parameter table of the live_view node (pure Python, no rclpy).

The node declares it with ``rlstack_common.param_table.declare_all``; docs/reference/live-view.md
is generated from it.
"""

from __future__ import annotations

import math
from typing import Any, List, Mapping

from rlstack_common.param_table import Param as P
from rlstack_view.core import check_bind, is_loopback

__all__ = ["LIVE_VIEW", "check_values"]

LIVE_VIEW: List[P] = [
    P("host", "127.0.0.1", "Address of the page's HTTP/WebSocket server; anything but loopback needs a token"),
    P("port", 8780, "Port of the page (0: any free port)", 0, 65535),
    P("token", "", "Token every page request must carry (?token=...); required (16+ characters) for a host that is "
      "not loopback. Default: the LIVE_VIEW_TOKEN environment variable"),
    P("foxglove", True, "Serve the Foxglove WebSocket protocol (needs foxglove-sdk)"),
    P("foxglove_host", "127.0.0.1", "Address of the Foxglove server: loopback only (the protocol has no token; "
      "reach it from another machine through an SSH tunnel)"),
    P("foxglove_port", 8765, "Port of the Foxglove server (0: any free port)", 0, 65535),
    P("camera_topic", "/head_camera/image_raw", "Camera shown (sensor_msgs/Image)"),
    P("camera_rate_hz", 2.0, "Camera frames sent to viewers, Hz", 0.1, 15.0),
    P("camera_width", 160, "Camera frames are downscaled to at most this wide, px", 32, 1280),
    P("state_rate_hz", 5.0, "Robot pose, plan, objects and mission state sent, Hz", 0.5, 30.0),
    P("map_frame", "map", "Fixed frame of the overhead map"),
    P("base_frame", "base_link", "Robot base frame"),
    P("dropoff", [-0.5, 0.0, math.pi], "Drop-off of the page's Fetch goals: x, y (m), yaw (rad) in map_frame"),
    P("fetch_action", "/fetch", "Fetch action of the mission"),
    P("max_message_bytes", 4096, "Largest WebSocket message a page may send, bytes", 256, 65536),
    P("max_query_chars", 200, "Longest Fetch request, characters", 8, 1000),
]


def check_values(v: Mapping[str, Any], token: str) -> None:
    """Refuse (ValueError) what the ranges cannot: a bad dropoff, a non-loopback page without a token
    (``token``: the parameter or LIVE_VIEW_TOKEN), a Foxglove server off loopback."""
    dropoff = v["dropoff"]
    if len(dropoff) != 3 or not all(math.isfinite(x) for x in dropoff):
        raise ValueError(f"dropoff must be [x, y, yaw], finite, got {list(dropoff)}")
    check_bind(v["host"], token)
    if not is_loopback(v["foxglove_host"]):
        port = v["foxglove_port"]
        raise ValueError(f"foxglove_host {v['foxglove_host']} is not loopback: the Foxglove protocol carries no "
                         f"token; keep it on 127.0.0.1 and tunnel (ssh -L {port}:127.0.0.1:{port} ROBOT)")
