"""The default pipeline on PyBullet frames (in-process): segmentation overlap, localisation, retrieval."""

import numpy as np
import pytest

pytest.importorskip("pybullet")

from rlstack_perception import simtools as st  # noqa: E402
from rlstack_perception.evaluate import evaluate  # noqa: E402
from rlstack_perception.segment import DepthPlaneSegmenter, support_levels  # noqa: E402


@pytest.fixture(scope="module")
def sim():
    from sim_bridges import make_backend

    with make_backend("pybullet") as backend:
        backend.load_scene("home")
        yield backend


def test_depth_plane_segments_match_ground_truth_masks(sim):
    sim.reset(seed=11)
    objs = st.target_objects(sim)
    rng = np.random.default_rng(1)
    seg = DepthPlaneSegmenter()
    ious = []
    for k, (_name, eye, tgt) in enumerate(st.object_views(sim, rng, 1, (0.7, 1.6), (0.9, 1.4))):
        if k >= 6:
            break
        f = st.render_view(sim, eye, tgt)
        pts, valid = f.points_world()
        segs = seg.segment(f, pts, valid, support_levels(pts, valid))
        for gm in st.gt_masks(f, objs, 30).values():
            ious.append(max(((s.mask & gm).sum() / (s.mask | gm).sum() for s in segs), default=0.0))
    # 0.97: the overlap the issue quotes for a weight-free depth segmenter (measured here: ~0.99)
    assert len(ious) >= 6 and np.median(ious) > 0.95 and np.mean(ious) > 0.97


def test_end_to_end_map_localises_and_answers_unseen_wordings():
    res = evaluate(layouts=(2100,), views=2, scenes=("panda_table",), log=lambda *a: None)["panda_table"]
    assert res["objects_missing"] == 0 and res["spurious_entries"] == 0
    assert res["map_err_median_m"] < 0.02 and res["map_err_p95_m"] < 0.05
    assert res["obs_err_median_m"] < res["naive_centroid_err_median_m"]
    assert res["retrieval_top1_unseen"] >= 0.95 and res["retrieval_top1_trained"] >= 0.95
