"""The soak's summary: success rate, RSS slope per node, fd and thread changes (no ROS)."""

from rlstack_mission.soak import slope, summarize


def test_slope_is_least_squares():
    assert slope([1.0, 2.0, 3.0, 4.0]) == 1.0
    assert slope([5.0, 5.0, 5.0]) == 0.0
    assert abs(slope([0.0, 1.0, 0.0, 1.0]) - 0.2) < 1e-12
    assert slope([7.0]) == 0.0


def test_summary_per_node():
    rows = [{"success": i != 2, "usage": {"nav": {"rss_mb": 100.0 + 0.5 * i, "fds": 40 + (i == 3), "threads": 9}}}
            for i in range(4)]
    s = summarize(rows)
    assert (s["fetches"], s["succeeded"], s["success_rate"]) == (4, 3, 0.75)
    nav = s["nodes"]["nav"]
    assert nav["rss_slope_mb_per_fetch"] == 0.5 and nav["rss_first_mb"] == 100.0 and nav["rss_last_mb"] == 101.5
    assert (nav["fds_change"], nav["threads_change"], nav["samples"]) == (1, 0, 4)
