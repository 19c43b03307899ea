"""pytest fixtures for multi-process ROS 2 tests.

Enable in a conftest.py with ``pytest_plugins = ["rlstack_testing.pytest_plugin"]``.

Fixtures
--------
ros_domain_id   a ROS_DOMAIN_ID leased for this test only
ros_processes   a :class:`ProcessGroup` on that domain; every process is stopped at teardown,
                and their output is attached to the report of a failing test
ros_probe       a :class:`RosProbe` on that domain

At the end of the session any process the harness started that is still alive is killed
and the session fails: a suite must never leave orphans behind.
"""

from __future__ import annotations

import pytest

from rlstack_testing.domain import lease_domain_id
from rlstack_testing.processes import ProcessGroup, live_processes


@pytest.fixture
def ros_domain_id():
    lease = lease_domain_id()
    try:
        yield lease.domain_id
    finally:
        lease.release()


@pytest.fixture
def ros_processes(ros_domain_id, tmp_path, request):
    group = ProcessGroup(ros_domain_id, tmp_path / "ros-logs")
    try:
        yield group
    finally:
        group.stop_all()
        for proc in group.processes:
            request.node.add_report_section(
                "teardown", f"{proc.name} (exit {proc.returncode})", proc.tail(60))


@pytest.fixture
def ros_probe(ros_domain_id):
    from rlstack_testing.probe import RosProbe  # imports rclpy: only when a test asks for it

    probe = RosProbe(ros_domain_id)
    try:
        yield probe
    finally:
        probe.close()


def pytest_sessionfinish(session, exitstatus):
    orphans = live_processes()
    if not orphans:
        return
    names = ", ".join(f"{p.name} (pid {p.pid})" for p in orphans)
    for proc in orphans:
        proc.stop(grace=1.0)
    session.config.get_terminal_writer().line(
        f"rlstack_testing: error: processes left running after the suite (now killed): {names}", red=True)
    session.exitstatus = pytest.ExitCode.TESTS_FAILED
