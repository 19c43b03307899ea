"""The parameter tables of the smoke-test nodes, smoke_talker and smoke_map (pure Python, no rclpy).

Each node declares its table with ``rlstack_common.param_table.declare_all``; ``launch/params/smoke_*.yaml``
are checked against them.
"""

from __future__ import annotations

from typing import List

from rlstack_common.param_table import Param as P

__all__ = ["SMOKE_MAP", "SMOKE_TALKER"]

SMOKE_TALKER: List[P] = [
    P("rate_hz", 10.0, "Publish rate of objects, Hz", 0.1, 1000.0),
    P("query_period_s", 0.5, "Period of the query_objects round trip, s", 0.05, 60.0),
    P("label", "yellow cube", "Label of the published object"),
    P("object_id", 7, "Id of the published object", 0, 2 ** 31 - 1),
]

SMOKE_MAP: List[P] = [
    P("frame_id", "map", "Frame of the answered positions"),
    P("max_objects", 1000, "Objects kept at most", 1, 100000),
]
