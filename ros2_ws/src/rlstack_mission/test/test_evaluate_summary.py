"""The fetch evaluation's summary: where the time of a successful fetch goes (median and p90 of each
mission phase, and of the whole fetch), from the episodes the evaluator records."""

import pytest

from rlstack_mission.evaluate import PHASES, STEPS, percentile, phase_stats, summarize


def episode(wall_s, success=True, **phases):
    return {"success": success, "code_name": "SUCCEEDED" if success else "UNREACHABLE", "reason": "r",
            "wall_s": wall_s, "dropoff_error_m": 0.05, "grasp_attempts": 1, "phase_durations": phases}


def test_percentile_interpolates_between_ranks_as_numpy_does():
    assert percentile([5.0], 90) == 5.0
    assert percentile([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0], 90) == pytest.approx(9.1)
    assert percentile([3.0, 1.0, 2.0], 50) == 2.0
    with pytest.raises(ValueError):
        percentile([], 90)


def test_phase_stats_cover_every_phase_of_successful_fetches_only():
    ok = [episode(60.0, EXPLORE=10.0 * i, GRASP=12.0) for i in range(1, 11)]
    stats = phase_stats(ok)
    assert set(stats) == set(PHASES)
    assert stats["EXPLORE"] == {"median": 55.0, "p90": 91.0, "mean": 55.0}
    assert stats["GRASP"] == {"median": 12.0, "p90": 12.0, "mean": 12.0}
    assert stats["DROP"] == {"median": 0.0, "p90": 0.0, "mean": 0.0}   # a phase a fetch never entered counts 0 s

    failed = episode(500.0, success=False, EXPLORE=400.0)
    s = summarize(ok + [failed], 700.0, False, {}, {}, "table", False)
    assert s["phase_s"] == stats
    assert s["time_per_successful_fetch_s"]["p90"] == 60.0 and s["succeeded"] == 10


def test_step_stats_leave_out_steps_no_fetch_passed_through():
    ok = [dict(episode(60.0, GRASP=12.0), step_durations={"lift": 10.0 + i, "dock": 2.0}) for i in range(3)]
    s = summarize(ok, 200.0, False, {}, {}, "table", False)
    assert set(s["step_s"]) == {"lift", "dock"}
    assert s["step_s"]["lift"] == {"median": 11.0, "p90": 11.8, "mean": 11.0}
    assert set(STEPS) >= set(s["step_s"])


def test_map_audit_summary_over_episodes_from_semantic_map_messages():
    """Each episode's map audit as the harness records it (a SemanticMap message against the truth), and
    the summary's totals and rates; episodes without a map (no /semantic_map came) are left out."""
    from geometry_msgs.msg import Point

    from rlstack_interfaces.msg import SemanticMap, SemanticObject
    from rlstack_perception.map_audit import audit_map_message

    truth = {"red_cube": (1.0, 0.0, 0.525), "red_ball": (2.0, 0.0, 0.03), "green_cube": (0.0, 1.0, 0.025),
             "table_1": (1.0, 0.0, 0.25)}

    def audited(objects):
        msg = SemanticMap()
        msg.header.frame_id = "map"
        msg.objects = [SemanticObject(label=label, position=Point(x=x, y=y, z=z)) for label, x, y, z in objects]
        return dict(episode(60.0, EXPLORE=10.0), map_audit=audit_map_message(msg, truth).as_dict())

    eps = [audited([("red cube", 1.0, 0.0, 0.52), ("red cylinder", 2.0, 0.02, 0.03), ("green bottle", 0.0, 1.0, 0.03),
                    ("green cube", 0.02, 1.0, 0.02)]),                        # 2 wrong labels, 1 duplicate
           audited([("red cube", 1.0, 0.0, 0.52), ("red cube", 1.0, 0.01, 0.53), ("red cube", 1.01, 0.0, 0.52),
                    ("blue ball", -2.0, -2.0, 0.03), ("red ball", 2.0, 0.0, 0.04)]),   # 2 duplicates, 1 phantom
           episode(60.0, EXPLORE=10.0)]                                       # no map audit
    s = summarize(eps, 200.0, False, {}, {}, "table", False)["map_audit"]
    assert (s["maps"], s["errors"], s["entries"], s["matched"], s["correct"]) == (2, 0, 9, 8, 6)
    assert s["label_accuracy"] == 0.75
    assert (s["duplicates"], s["duplicates_per_map"]) == (3, {"mean": 1.5, "max": 2})
    assert (s["phantoms"], s["phantoms_per_map"]["mean"]) == (1, 0.5)
    assert s["wrong_labels"] == {'"red cylinder" on red_ball': 1, '"green bottle" on green_cube': 1}
    assert summarize([episode(60.0, EXPLORE=10.0)], 60.0, False, {}, {}, "table", False)["map_audit"] is None
