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


def test_cpu_share_and_restarts_per_node():
    # the localizer's process is replaced after the second fetch (a respawn): CPU is over one process only
    rows = [{"success": True, "time": 100.0 + 10 * i,
             "usage": {"nav": {"pid": 7, "rss_mb": 50.0, "fds": 3, "threads": 4, "cpu_s": 2.0 + 5.0 * i},
                       "loc": {"pid": 8 if i < 2 else 9, "rss_mb": 60.0, "fds": 3, "threads": 4, "cpu_s": 1.0 * i}}}
            for i in range(4)]
    s = summarize(rows)
    assert s["nodes"]["nav"]["cpu_percent_mean"] == 50.0 and s["nodes"]["nav"]["restarts"] == 0
    assert s["nodes"]["loc"]["cpu_percent_mean"] is None and s["nodes"]["loc"]["restarts"] == 1
    assert s["nodes"]["nav"]["rss_slope_second_half_mb_per_fetch"] == 0.0
