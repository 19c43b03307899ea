"""The map audit (rlstack_perception.map_audit): each count against a hand-built map and ground truth, ties,
an empty map, bad input, and the audit of a real rlstack_interfaces/SemanticMap message."""

import json
import math

import pytest

from rlstack_perception.embed import ALL_LABELS
from rlstack_perception.map_audit import (
    KIND_WORDS,
    audit,
    audit_map_message,
    map_audit_line,
    map_audit_summary,
    object_of,
    parse_label,
)

# a few objects of home (floor and a 0.5 m table), one of home_kinds, and furniture that is no object
TRUTH = {
    "red_cube": (1.0, 0.0, 0.025),
    "red_ball": (2.0, 0.0, 0.03),
    "green_cube": (0.0, 1.0, 0.525),           # on a table
    "blue_cylinder": (-1.0, 0.0, 0.04),
    "yellow_duck": (0.0, -1.0, 0.03),
    "table_1": (0.0, 1.0, 0.25),                # furniture: no object
    "wall_north": (0.0, 3.0, 0.5),
}


def test_label_and_name_parsing_follow_the_maps_vocabulary():
    assert parse_label("green bottle") == ("green", "bottle")
    assert parse_label("red sphere") == ("red", "ball") and parse_label("blue block") == ("blue", "cube")
    assert parse_label("") == (None, None) and parse_label("purple cup") == (None, None)
    # every label the map can give parses to its own colour and kind
    for lab in ALL_LABELS:
        c, k = lab.split()
        assert parse_label(lab) == (c, k)
    assert object_of("yellow_duck") == ("yellow", "duck") and object_of("red_lego") == ("red", "lego")
    assert object_of("table_1") is None and object_of("wall_north") is None and object_of("purple_cube") is None
    assert KIND_WORDS["sphere"] == "ball"


def test_each_count_on_a_hand_built_map():
    entries = [
        ("red cube", 1.03, 0.02, 0.03),        # correct
        ("red cube", 0.95, -0.05, 0.02),       # correct, a duplicate on red_cube
        ("red cylinder", 2.0, 0.05, 0.03),     # on red_ball: wrong kind
        ("green bottle", 0.05, 1.0, 0.52),     # on green_cube: wrong kind
        ("", -1.02, 0.0, 0.05),                # on blue_cylinder, unnamed: not correct
        ("yellow duck", 0.0, -1.1, 0.03),      # correct (home_kinds)
        ("blue ball", 3.0, 3.0, 0.03),         # nothing there: a phantom
        ("green cube", 0.0, 1.0, 0.05),        # under green_cube, on the floor: not height-consistent, a phantom
    ]
    r = audit(entries, TRUTH)
    assert (r.entries, r.objects, r.matched, r.correct) == (8, 5, 6, 3)
    assert r.label_accuracy == pytest.approx(0.5)
    assert (r.duplicates, r.duplicated_objects, r.phantoms, r.unnamed, r.stale, r.non_finite) == (1, 1, 2, 1, 0, 0)
    assert r.missed == []
    assert [(w["label"], w["object"]) for w in r.wrong_labels] == [
        ("red cylinder", "red_ball"), ("green bottle", "green_cube"), ("", "blue_cylinder")]
    assert [p["label"] for p in r.phantom_entries] == ["blue ball", "green cube"]
    d = r.as_dict()
    json.dumps(d)   # results.json takes it as it is
    assert d["label_accuracy"] == 0.5 and d["duplicates"] == 1 and d["phantoms"] == 2
    assert d["phantom_entries"][0]["position"] == [3.0, 3.0, 0.03]


def test_radius_is_in_x_y_and_inclusive_and_missed_objects_are_named():
    r = audit([("red cube", 1.14, 0.0, 0.025), ("red ball", 2.16, 0.0, 0.03)], TRUTH)
    assert (r.matched, r.phantoms) == (1, 1)                  # 0.14 m: in; 0.16 m: out
    assert audit([("red cube", 1.25, 0.0, 0.025)], TRUTH, radius=0.25).matched == 1   # exactly the radius: in
    assert r.missed == ["blue_cylinder", "green_cube", "red_ball", "yellow_duck"]
    assert audit([("red ball", 2.16, 0.0, 0.03)], TRUTH, radius=0.2).matched == 1
    # a height difference of 0.1 m is in the default tolerance, not in a 0.05 m one
    assert audit([("red cube", 1.0, 0.0, 0.125)], TRUTH).matched == 1
    assert audit([("red cube", 1.0, 0.0, 0.125)], TRUTH, height_tol=0.05).phantoms == 1


def test_nearest_object_wins_and_ties_go_by_name():
    truth = {"red_cube": (0.0, 0.0, 0.025), "blue_cube": (0.25, 0.0, 0.025)}
    r = audit([("red cube", 0.12, 0.0, 0.025)], truth)        # nearer red_cube (0.12 vs 0.13)
    assert (r.correct, r.wrong_labels) == (1, [])
    r = audit([("red cube", 0.125, 0.0, 0.025)], truth)       # halfway: the first name, blue_cube
    assert r.correct == 0 and r.wrong_labels[0]["object"] == "blue_cube"
    # two entries on two objects are no duplicates; two on one are one
    r = audit([("red cube", 0.0, 0.0, 0.02), ("blue cube", 0.25, 0.0, 0.02), ("blue cube", 0.27, 0.0, 0.02)], truth)
    assert (r.duplicates, r.duplicated_objects, r.correct) == (1, 1, 3)


def test_empty_map_and_empty_truth():
    r = audit([], TRUTH)
    assert (r.entries, r.matched, r.phantoms, r.duplicates, r.label_accuracy) == (0, 0, 0, 0, None)
    assert len(r.missed) == 5 and r.as_dict()["label_accuracy"] is None
    r = audit([("red cube", 1.0, 0.0, 0.025)], {})            # ground truth missing the object: a phantom
    assert (r.objects, r.phantoms, r.matched) == (0, 1, 0)


def test_non_finite_positions_are_phantoms_and_malformed_entries_are_rejected():
    r = audit([("red cube", math.nan, 0.0, 0.025), ("red cube", 1.0, math.inf, 0.025), ("red cube", 1.0, 0.0, 0.025)],
              TRUTH)
    assert (r.entries, r.non_finite, r.phantoms, r.matched, r.correct) == (3, 2, 2, 1, 1)
    assert r.phantom_entries[0]["position"] == [None, 0.0, 0.025]
    json.dumps(r.as_dict(), allow_nan=False)                  # no NaN in the record
    # an object whose truth is not finite is left out (an entry there is a phantom)
    r = audit([("red cube", 1.0, 0.0, 0.025)], {"red_cube": (math.nan, 0.0, 0.025)})
    assert (r.objects, r.phantoms) == (0, 1)
    with pytest.raises(ValueError, match="map entry 0"):
        audit([("red cube", 1.0, 0.0)], TRUTH)
    with pytest.raises(ValueError, match="map entry 0"):
        audit([("red cube", "a", 0.0, 0.0)], TRUTH)
    with pytest.raises(ValueError, match="ground truth 'red_cube'"):
        audit([], {"red_cube": (1.0, 2.0)})
    with pytest.raises(ValueError, match="radius"):
        audit([], TRUTH, radius=0.0)
    with pytest.raises(ValueError, match="radius"):
        audit([], TRUTH, radius=math.nan)


def test_entries_where_a_moved_object_was_are_stale_not_phantoms():
    start = dict(TRUTH, red_cube=(3.0, -2.0, 0.525))          # the fetched cube: on a table at the start
    entries = [("red cube", 3.02, -2.0, 0.53), ("red cube", 1.0, 0.0, 0.03), ("red ball", 3.0, -2.05, 0.52)]
    r = audit(entries, TRUTH, start=start)
    assert (r.matched, r.stale, r.phantoms, r.duplicates, r.correct) == (3, 2, 0, 1, 2)
    assert r.wrong_labels == [{"label": "red ball", "object": "red_cube", "position": [3.0, -2.05, 0.52],
                               "stale": True}]
    assert audit(entries, TRUTH).phantoms == 2                # without the start: phantoms
    # an object that stayed (within the radius) has no second place
    r = audit([("red cube", 1.0, 0.0, 0.03)], TRUTH, start=dict(TRUTH, red_cube=(1.05, 0.0, 0.025)))
    assert (r.stale, r.matched) == (0, 1)


def semantic_map(frame, objects):
    from geometry_msgs.msg import Point

    from rlstack_interfaces.msg import SemanticMap, SemanticObject

    msg = SemanticMap()
    msg.header.frame_id = frame
    msg.objects = [SemanticObject(id=i + 1, label=label, position=Point(x=x, y=y, z=z))
                   for i, (label, x, y, z) in enumerate(objects)]
    return msg


def test_audit_of_a_semantic_map_message():
    msg = semantic_map("map", [("red cube", 1.0, 0.0, 0.025), ("green bottle", 0.0, 1.0, 0.5),
                               ("red cube", 1.01, 0.0, 0.025), ("red ball", math.nan, 0.0, 0.0)])
    r = audit_map_message(msg, TRUTH)
    assert (r.entries, r.matched, r.correct, r.duplicates, r.phantoms, r.non_finite) == (4, 3, 2, 1, 1, 1)
    assert r.wrong_labels[0]["label"] == "green bottle" and r.wrong_labels[0]["object"] == "green_cube"
    assert audit_map_message(semantic_map("map", []), TRUTH).entries == 0
    with pytest.raises(ValueError, match="frame 'odom'"):
        audit_map_message(semantic_map("odom", []), TRUTH)
    assert audit_map_message(semantic_map("odom", []), TRUTH, frames=("map", "odom")).entries == 0


def test_episode_line_and_summary_over_episodes():
    one = audit([("red cube", 1.0, 0.0, 0.025), ("red cube", 1.0, 0.01, 0.025), ("green bottle", 0.0, 1.0, 0.5)],
                TRUTH).as_dict()
    two = audit([("red ball", 2.0, 0.0, 0.03), ("blue ball", 3.0, 3.0, 0.0)], TRUTH).as_dict()
    line = map_audit_line({"map_audit": one})
    assert "3 entries" in line and "labels 2/3 correct" in line and '"green bottle" on green_cube' in line
    assert map_audit_line({}) == "" and "failed" in map_audit_line({"map_audit_error": "ValueError: x"})
    s = map_audit_summary([{"map_audit": one}, {"map_audit": two}, {"success": True},
                           {"map_audit_error": "ValueError: x"}])
    assert (s["maps"], s["errors"], s["entries"], s["matched"], s["correct"]) == (2, 1, 5, 4, 3)
    assert s["label_accuracy"] == 0.75
    assert s["duplicates_per_map"] == {"mean": 0.5, "max": 1} and s["phantoms_per_map"] == {"mean": 0.5, "max": 1}
    assert s["wrong_labels"] == {'"green bottle" on green_cube': 1}
    assert map_audit_summary([{"success": True}]) is None
