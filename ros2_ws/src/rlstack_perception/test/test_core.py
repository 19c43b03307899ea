"""Unit tests of the pure cores on analytic frames (no ROS, no simulator)."""

import json

import numpy as np
import pytest
from synthetic import render

from rlstack_perception.embed import ALL_LABELS
from rlstack_perception.frame import Frame, FrameError
from rlstack_perception.localise import localise, surface_centroid
from rlstack_perception.segment import (
    DepthPlaneSegmenter,
    FilterConfig,
    Segment,
    filter_segments,
    height_above_support,
    support_levels,
)
from rlstack_perception.semantic_map import CorruptMapFile, Detection, MapConfig, SemanticMapCore
from rlstack_perception.tf_buffer import TfBuffer

BOXES = [((0.0, 0.0, 0.05), (0.1, 0.1, 0.1), (255, 0, 0)), ((0.1, 0.4, 0.04), (0.08, 0.08, 0.08), (0, 0, 255))]


def test_support_plane_segmentation_and_robust_localisation():
    f = render(BOXES)
    pts, valid = f.points_world()
    levels = support_levels(pts, valid)
    assert len(levels) >= 1 and abs(levels[0]) < 0.005
    segs = DepthPlaneSegmenter().segment(f, pts, valid, levels)
    kept, _ = filter_segments(segs, valid, FilterConfig(min_area=20))
    assert len(kept) == 2
    _, base = height_above_support(pts, levels)
    for centre, size, _ in BOXES:
        s = min(kept, key=lambda s: np.linalg.norm(np.nanmean(pts[s.mask], 0)[:2] - centre[:2]))
        loc = localise(pts[s.mask], f.camera_position, float(np.nanmedian(base[s.mask])), pixel_size=1.3 / f.fx)
        naive = surface_centroid(pts[s.mask])
        err = np.linalg.norm(loc.centre - centre)
        assert err < 0.012, (loc.centre, centre)
        assert err < np.linalg.norm(naive - centre)  # better than the visible-surface centroid
        assert abs(loc.size[2] - size[2]) < 0.01


def test_frame_validation_kinds():
    f = render(BOXES)
    f.validate()
    bad = Frame(f.rgb[:-1], f.depth, f.fx, f.fy, f.cx, f.cy, f.rotation, f.translation)
    with pytest.raises(FrameError) as e:
        bad.validate()
    assert e.value.kind == "size_mismatch"
    nan = Frame(f.rgb, np.full_like(f.depth, np.nan), f.fx, f.fy, f.cx, f.cy, f.rotation, f.translation)
    with pytest.raises(FrameError) as e:
        nan.validate()
    assert e.value.kind == "no_depth"
    zero = Frame(f.rgb, np.zeros_like(f.depth), f.fx, f.fy, f.cx, f.cy, f.rotation, f.translation)
    with pytest.raises(FrameError):
        zero.validate()


def test_filters_drop_small_unstable_and_depthless_masks():
    valid = np.ones((20, 20), bool)
    valid[:, :10] = False
    m_small = np.zeros((20, 20), bool)
    m_small[15:17, 15:17] = True
    m_ok = np.zeros((20, 20), bool)
    m_ok[2:12, 12:20] = True
    m_nodepth = np.zeros((20, 20), bool)
    m_nodepth[2:12, 0:8] = True
    segs = [Segment(m_small), Segment(m_ok), Segment(m_ok, stability=0.2), Segment(m_nodepth)]
    kept, dropped = filter_segments(segs, valid, FilterConfig(min_area=10))
    assert kept == [segs[1]]
    assert dropped == {"small": 1, "large": 0, "unstable": 1, "no_depth": 1}


def _e(*v):
    v = np.asarray(v, np.float32)
    return v / np.linalg.norm(v)


def test_map_association_fusion_query_and_forget():
    m = SemanticMapCore(MapConfig(sim_threshold=0.8, gate_m=0.2), labels=["red", "blue"],
                        label_embeddings=np.stack([_e(1, 0, 0), _e(0, 1, 0)]))
    red, blue = _e(1, 0.05, 0), _e(0.05, 1, 0)
    assert m.update([Detection(np.array([1.0, 0, 0]), np.ones(3) * .05, red, 1.0, 1.0)]) == (0, 1)
    # same look, nearby: update; same look far away: a new entry; other look nearby: new entry
    assert m.update([Detection(np.array([1.1, 0, 0]), np.ones(3) * .05, red, 1.0, 2.0)]) == (1, 0)
    assert m.update([Detection(np.array([3.0, 0, 0]), np.ones(3) * .05, red, 1.0, 3.0),
                     Detection(np.array([1.05, 0, 0]), np.ones(3) * .05, blue, 1.0, 3.0)]) == (0, 2)
    assert len(m) == 3
    first = m.objects[1]
    assert first.observations == 2 and first.position[0] == pytest.approx(1.05)
    assert first.label == "red" and 0 < first.confidence < 1 and first.last_seen == 2.0
    ranked = m.query(_e(0, 1, 0))
    assert ranked[0][0].label == "blue" and ranked[0][1] > 0.9
    assert len(m.query(_e(0, 1, 0), max_results=1)) == 1
    assert len(m.query(_e(0, 1, 0), min_score=0.5)) == 1
    assert m.forget([1, 99]) == 1 and len(m) == 2
    assert m.forget_older_than(3.0) == 0 and m.forget_older_than(3.5) == 2
    m.update([Detection(np.zeros(3), np.ones(3), red)])
    assert m.clear() == 1 and len(m) == 0


def test_map_save_load_atomic_and_corrupt_file_set_aside(tmp_path):
    m = SemanticMapCore()
    m.update([Detection(np.array([1.0, 2.0, 0.1]), np.ones(3) * 0.05, _e(1, 0, 0), 1.0, 5.0)])
    path = m.save(tmp_path / "map.json")
    assert [p.name for p in tmp_path.iterdir()] == ["map.json"]  # no temp file left behind
    m2 = SemanticMapCore()
    assert m2.load(path) == 1 and m2.objects[1].position.tolist() == [1.0, 2.0, 0.1]
    m2.update([Detection(np.array([5.0, 0, 0]), np.ones(3), _e(0, 1, 0))])
    assert max(m2.objects) == 2  # ids continue after a load
    # truncated file: moved aside, map unchanged
    path.write_text(path.read_text()[:40])
    with pytest.raises(CorruptMapFile) as e:
        m2.load(path)
    assert not path.exists() and e.value.moved_to.exists() and len(m2) == 2
    # valid JSON with a bad object: still all-or-nothing
    doc = json.loads(e.value.moved_to.read_text()[:0] or "{}")
    path.write_text(json.dumps({"format": "rlstack_semantic_map/1", "objects": [{"id": 1, "position": [1, 2]}]}))
    with pytest.raises(CorruptMapFile):
        m2.load(path)
    assert len(m2) == 2 and doc == {}
    with pytest.raises(FileNotFoundError):
        m2.load(tmp_path / "missing.json")


def test_tf_buffer_composes_static_and_interpolates_dynamic():
    tf = TfBuffer()
    s = np.sqrt(0.5)
    tf.set_transform("odom", "base_link", [0, 0, 0], [0, 0, 0, 1], stamp=0.0)
    tf.set_transform("odom", "base_link", [1, 0, 0], [0, 0, s, s], stamp=1.0)  # yaw 90 deg
    tf.set_transform("base_link", "cam", [0.5, 0, 1.0], [0, 0, 0, 1], static=True)
    r, t = tf.lookup("odom", "cam", 1.0)
    assert np.allclose(t, [1.0, 0.5, 1.0]) and np.allclose(r @ [1, 0, 0], [0, 1, 0])
    r, t = tf.lookup("odom", "cam", 0.5)
    assert np.allclose(t[2], 1.0) and t[0] == pytest.approx(0.5 + 0.5 * np.cos(np.pi / 4))
    r, t = tf.lookup("cam", "odom", 1.0)  # inverse
    assert np.allclose(r @ [1.0, 0.5, 1.0] + t, 0, atol=1e-9)
    with pytest.raises(LookupError):
        tf.lookup("odom", "nowhere", 1.0)
    with pytest.raises(LookupError):
        tf.lookup("odom", "cam", 5.0)  # beyond extrapolation
    with pytest.raises(ValueError):
        tf.set_transform("odom", "x", [np.nan, 0, 0], [0, 0, 0, 1])


def test_tf_buffer_says_when_a_transform_is_not_known_yet():
    """A stamp past the newest transform is 'not yet' (the map waits for /tf, as tf2's MessageFilter),
    one before the oldest is an ordinary miss."""
    from rlstack_perception.tf_buffer import TfBuffer, TransformNotYet

    tf = TfBuffer(max_extrapolation=0.05)
    for s in (1.0, 1.1, 1.2):
        tf.set_transform("odom", "base_link", (s, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), s, False)
    rot, trans = tf.lookup("odom", "base_link", 1.15)
    assert abs(trans[0] - 1.15) < 1e-9
    with pytest.raises(TransformNotYet):
        tf.lookup("odom", "base_link", 1.5)
    with pytest.raises(LookupError) as info:
        tf.lookup("odom", "base_link", 0.5)
    assert not isinstance(info.value, TransformNotYet)


# ---------------------------------------------------------------- one entry per object (merge_m)
# one orthogonal prototype per label of the full vocabulary: a view's embedding is a mix of the label it
# shows and the label a poor look reads (a far, small or half-hidden blue cylinder reading "blue bunny")
PROTOS = np.eye(len(ALL_LABELS), 96, dtype=np.float32)


def _look(label, misread=None, how_poor=0.0):
    e = PROTOS[ALL_LABELS.index(label)] * (1.0 - how_poor)
    if misread is not None:
        e = e + PROTOS[ALL_LABELS.index(misread)] * how_poor
    return e / np.linalg.norm(e)


def _det(x, emb, weight=1.0, stamp=0.0, y=0.0, z=0.025):
    return Detection(np.array([x, y, z]), np.ones(3) * 0.05, emb, weight, stamp)


def _map(merge_m=0.10, labels=ALL_LABELS):
    protos = PROTOS if labels else None
    return SemanticMapCore(MapConfig(sim_threshold=0.75, gate_m=0.25, merge_m=merge_m), labels, protos)


def test_a_poor_view_of_an_entrys_colour_fuses_into_it():
    poor = _look("blue cylinder", "blue bunny", 0.6)   # reads "blue bunny": cosine 0.55 to the cylinder
    assert float(poor @ _look("blue cylinder")) < 0.75
    m = _map()
    for t in range(5):
        m.update([_det(1.0, _look("blue cylinder"), stamp=t)])
    assert m.update([_det(1.04, poor, 0.3, stamp=9.0)]) == (1, 0)
    (obj,) = m.objects.values()
    assert obj.id == 1 and obj.observations == 6 and obj.last_seen == 9.0 and obj.label == "blue cylinder"
    assert obj.position[0] == pytest.approx(1.0 + 0.04 * 0.3 / 5.3)
    # today's behaviour without the rule, or without labels to read a colour from: a new entry, named
    # by the poor view alone
    for m in (_map(merge_m=0.0), _map(labels=())):
        for t in range(5):
            m.update([_det(1.0, _look("blue cylinder"), stamp=t)])
        assert m.update([_det(1.04, poor, 0.3)]) == (0, 1) and len(m) == 2 and m.merged == 0
    assert sorted(o.label for o in m.objects.values()) == ["", ""]      # no labels: no names either
    m = _map(merge_m=0.0)
    m.update([_det(1.0, _look("blue cylinder"))])
    m.update([_det(1.04, poor, 0.3)])
    assert sorted(o.label for o in m.objects.values()) == ["blue bunny", "blue cylinder"]


def test_objects_of_other_colours_or_too_far_stay_apart():
    m = _map()
    for _ in range(3):
        m.update([_det(1.0, _look("red cube")), _det(1.06, _look("blue ball"))])
    # a poor look at the red cube that reads blue, beside the blue ball: fused into the ball (the colour
    # decides, as the label would), never into the red cube
    m.update([_det(1.0, _look("red cube", "blue bucket", 0.7), 0.2)])
    assert sorted(o.label for o in m.objects.values()) == ["blue ball", "red cube"]
    assert m.objects[1].observations == 3 and m.merged == 0
    # one colour, 12 cm apart (mobile_table's two cubes; home_kinds' closest are 13 cm): two objects
    m.update([_det(2.0, _look("green cube")), _det(2.12, _look("green lego"))])
    assert len(m) == 4 and m.merged == 0
    # an unnamed look (below label_min_score: no colour to trust) opens an entry, as before
    m.update([_det(2.03, _e(*([0.0] * 95 + [1.0])))])    # orthogonal to every label: unnamed
    assert len(m) == 5


def test_entries_that_converge_merge_into_the_better_observed_one():
    m = _map()
    for t in range(5):
        m.update([_det(0.0, _look("green cylinder"), stamp=t)])      # id 1: weight 5
    m.update([_det(0.14, _look("green cylinder", "green pyramid", 0.8), 0.2, stamp=6.0)])
    assert len(m) == 2 and m.objects[2].label == "green pyramid"     # 14 cm off: no merge yet
    # the second entry's next look lands nearer (its first was a far, poor one); it moves to 7.3 cm
    # from the first, and the two are one object
    updated, added = m.update([_det(0.06, _look("green cylinder", "green pyramid", 0.8), 1.0, stamp=7.0)])
    assert (updated, added) == (1, 0) and m.merged == 1
    (obj,) = m.objects.values()
    assert obj.id == 1 and obj.label == "green cylinder" and obj.observations == 7 and obj.last_seen == 7.0
    assert obj.weight == pytest.approx(6.2) and obj.position[0] == pytest.approx((0.14 * 0.2 + 0.06) / 6.2)
    # the merged-away id is gone: forgetting it forgets nothing, and ids are not reused
    assert m.forget([2]) == 0
    m.update([_det(3.0, _look("red ball"))])
    assert max(m.objects) == 3
    # the survivor is the one with more evidence, not the older one
    m = _map()
    m.update([_det(0.0, _look("yellow ball", "yellow egg", 0.8), 0.2)])
    for _ in range(4):
        m.update([_det(0.2, _look("yellow ball"))])
    m.update([_det(0.08, _look("yellow ball"))])        # pulls the ball entry to 16 cm, then ...
    assert len(m) == 2
    for _ in range(10):                                 # ... the views that show where it is
        m.update([_det(0.03, _look("yellow ball"))])
    (obj,) = m.objects.values()
    assert obj.id == 2 and obj.label == "yellow ball" and m.merged == 1


def test_a_merged_map_saves_and_loads_as_it_was(tmp_path):
    m = _map()
    for t in range(3):
        m.update([_det(0.0, _look("blue cube"), stamp=t), _det(1.0, _look("yellow cylinder"), stamp=t)])
    m.update([_det(0.05, _look("blue cube", "blue wedge", 0.8), 0.2, stamp=5.0)])
    assert len(m) == 2 and m.objects[1].observations == 4
    m2 = _map()
    assert m2.load(m.save(tmp_path / "map.json")) == 2
    for i, o in m.objects.items():
        o2 = m2.objects[i]
        assert (o2.label, o2.observations, o2.last_seen) == (o.label, o.observations, o.last_seen)
        assert np.allclose(o2.position, o.position) and np.allclose(o2.embedding, o.embedding)
        assert o2.weight == pytest.approx(o.weight)
    assert m2.consolidate() == 0            # a consolidated map has nothing left to merge


def test_bad_merge_m_is_refused():
    from rlstack_common.param_table import check_values
    from rlstack_perception.parameters import SEMANTIC_MAP

    for bad in (-0.1, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="merge_m"):
            MapConfig(merge_m=bad)
    assert check_values(SEMANTIC_MAP, {"merge_m": 0.0}) == [] and check_values(SEMANTIC_MAP, {"merge_m": 0.1}) == []
    for bad in (-0.1, 2.0):
        assert check_values(SEMANTIC_MAP, {"merge_m": bad}), bad
