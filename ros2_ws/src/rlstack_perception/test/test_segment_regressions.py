"""Regressions of the depth-plane segmenter found by the home-scene diagnosis."""

import numpy as np

from rlstack_perception.segment import support_levels


def test_a_support_plane_on_a_histogram_bin_edge_is_found():
    """A table top at exactly z = 0.500 splits its pixels over the 0.49 and 0.50 bins. Each bin
    alone held fewer pixels than the level threshold, so the table was missed and every object
    on it went unsegmented. Bins are now counted in neighbouring pairs."""
    h, w = 240, 320
    ys, xs = np.mgrid[0:h, 0:w].astype(float)
    points = np.stack([xs * 0.01, ys * 0.01, np.zeros((h, w))], axis=-1)
    # A table patch (40 x 32 px) whose height alternates just below and just above 0.500 m:
    # at the segmenter's stride 2 that is 320 samples, split 160 / 160 between two bins, while
    # the threshold for this frame is 1% of the valid samples (192).
    rows, cols = slice(100, 140), slice(200, 232)
    points[rows, cols, 2] = 0.5 + np.where((ys[rows, cols] // 2 + xs[rows, cols] // 2) % 2 == 0, -0.0003, 0.0003)
    valid = np.ones((h, w), dtype=bool)
    levels = support_levels(points, valid)
    assert np.any(np.abs(levels - 0.0) < 0.005), levels
    assert np.any(np.abs(levels - 0.5) < 0.005), levels
