"""rlstack_testing: run ROS 2 nodes as real processes in tests, on a private domain.

Typical use in a pytest test (fixtures come from ``rlstack_testing.pytest_plugin``)::

    def test_round_trip(ros_processes, ros_probe):
        ros_processes.start_node("rlstack_smoke", "smoke_map", params_file=PARAMS)
        ros_probe.wait_for_subscribers("/objects")          # discovery, not sleep
        reply = ros_probe.call(QueryObjects, "/query_objects", QueryObjects.Request(text="cube"))

Nothing here imports rclpy at module import time except :mod:`rlstack_testing.probe`,
so the process helpers also serve tools that must not load ROS.
"""

from rlstack_testing.domain import DomainLease, lease_domain_id
from rlstack_testing.processes import NodeProcess, ProcessGroup, live_processes, resolve_executable

__all__ = [
    "DomainLease",
    "NodeProcess",
    "ProcessGroup",
    "lease_domain_id",
    "live_processes",
    "resolve_executable",
]
