"""Batch tools run their graph on a leased ROS domain unless the user chose one (no rclpy)."""

import os

from rlstack_mission.graph import use_private_domain


def test_leases_a_domain_when_none_is_set(monkeypatch, tmp_path):
    monkeypatch.delenv("ROS_DOMAIN_ID", raising=False)
    monkeypatch.setenv("RLSTACK_DOMAIN_LOCK_DIR", str(tmp_path))
    first = use_private_domain()
    try:
        assert first is not None and os.environ["ROS_DOMAIN_ID"] == str(first.domain_id)
        assert first.domain_id != 0   # never the default domain, where users' own graphs run
        monkeypatch.delenv("ROS_DOMAIN_ID")
        second = use_private_domain()   # a second tool on this machine gets another domain
        try:
            assert second.domain_id != first.domain_id
        finally:
            second.release()
    finally:
        first.release()


def test_keeps_the_users_domain(monkeypatch):
    monkeypatch.setenv("ROS_DOMAIN_ID", "42")
    assert use_private_domain() is None
    assert os.environ["ROS_DOMAIN_ID"] == "42"
