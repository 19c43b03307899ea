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


def test_false_successes_times_and_worst_node():
    """A fetch the mission called SUCCEEDED that the evaluator did not confirm is counted apart from the
    other failures; times are over confirmed successes; the worst node's slope and changes are named."""
    def row(i, success, code="SUCCEEDED", wall=50.0, rss=100.0, fds=40, start_localised=True):
        return {"success": success, "code_name": code, "wall_s": wall, "time": 1000.0 + 60.0 * i,
                "start_localised": start_localised,
                "usage": {"nav": {"pid": 1, "rss_mb": rss, "fds": fds, "threads": 9},
                          "map": {"pid": 2, "rss_mb": 300.0 + 2.0 * i, "fds": 20, "threads": 5}}}
    rows = [row(0, True, wall=40.0), row(1, False), row(2, False, "UNREACHABLE", 90.0),
            row(3, True, wall=60.0, fds=42, start_localised=False), row(4, True, wall=50.0, start_localised=None)]
    s = summarize(rows)
    assert s["mission_succeeded_evaluator_failed"] == 1
    assert s["failures"] == {"SUCCEEDED": 1, "UNREACHABLE": 1}
    assert (s["fetch_s_median"], s["fetch_s_p90"]) == (50.0, 58.0)
    assert s["rss_slope_mb_per_fetch_max"] == 2.0
    assert s["rss_slope_second_half_max"] == {"node": "map", "mb_per_fetch": 2.0}
    assert (s["fds_change_max"], s["threads_change_max"], s["restarts"]) == (0, 0, 0)   # nav: 40 -> 40
    assert s["starts_not_localised"] == 1
    assert s["wall_min"] == round((240.0 + 40.0) / 60, 1)


def test_summary_of_no_rows_has_no_figures():
    s = summarize([])
    assert (s["fetches"], s["succeeded"], s["fetch_s_median"], s["wall_min"]) == (0, 0, None, None)
    assert s["starts_not_localised"] is None   # not recorded: unknown, not zero
