"""sim_bridges.sensor_noise: RGB-D depth noise like an active-stereo camera's (robot mode)."""

from __future__ import annotations

import numpy as np
import pytest

from sim_bridges.sensor_noise import DepthNoise

FX = FY = 300.0
CX, CY = 160.0, 120.0


def _plane(z: float, shape=(240, 320)) -> np.ndarray:
    return np.full(shape, z, np.float32)


def test_off_is_the_identity():
    depth = _plane(1.3)
    rgb = np.zeros((240, 320, 3), np.uint8)
    out, out_rgb = DepthNoise.off().apply(depth, FX, FY, CX, CY, np.random.default_rng(0), rgb)
    assert out is depth and out_rgb is rgb


@pytest.mark.parametrize("z", [0.8, 1.5, 2.5])
def test_noise_grows_with_range_squared(z):
    noise = DepthNoise(subpixel_steps=0.0, dropout=0.0)   # the Gaussian part alone
    out, _ = noise.apply(_plane(z), FX, FY, CX, CY, np.random.default_rng(1))
    err = out[np.isfinite(out)] - z
    assert np.std(err) == pytest.approx(noise.sigma_0 + noise.k_z2 * z * z, rel=0.05)
    assert abs(np.mean(err)) < 0.2 * np.std(err)


def test_quantisation_is_in_disparity():
    noise = DepthNoise(sigma_0=0.0, k_z2=0.0, dropout=0.0)
    for z in (1.0, 2.0):
        out, _ = noise.apply(_plane(z), FX, FY, CX, CY, np.random.default_rng(2))
        fb = noise.focal_px * noise.baseline
        step = z * z / fb / noise.subpixel_steps      # depth step at this range
        assert abs(float(out[0, 0]) - z) <= 0.5 * step + 1e-6


def test_edges_and_grazing_surfaces_lose_their_return():
    depth = _plane(1.0)
    depth[:, 160:] = 1.5                          # a depth jump down the middle
    out, _ = DepthNoise(dropout=0.0).apply(depth, FX, FY, CX, CY, np.random.default_rng(3))
    assert np.isnan(out[:, 159:161]).all()        # both sides of the jump
    assert np.isfinite(out[:, 20:140]).mean() > 0.99
    # the plane z = 1 + a y (a = tan 85 deg): the central rays meet it 85 deg from its normal, the rays
    # 0.3 rad up only ~68 deg from it
    a = np.tan(np.radians(85.0))
    v = (np.arange(240, dtype=np.float64)[:, None] - CY) / FY
    with np.errstate(divide="ignore"):
        plane = np.repeat(np.where(1 - a * v > 0.15, 1.0 / (1 - a * v), np.nan), 320, axis=1).astype(np.float32)
    out, _ = DepthNoise(dropout=0.0, edge_jump=1.0).apply(plane, FX, FY, CX, CY, np.random.default_rng(4))
    assert np.isnan(out[int(CY) - 3:int(CY) + 3, 10:-10]).mean() > 0.9       # grazing: lost
    assert np.isfinite(out[int(CY) - 95:int(CY) - 85, 10:-10]).mean() > 0.9  # ~68 deg: kept


def test_seeded_and_existing_nans_stay_nan():
    depth = _plane(1.2)
    depth[10:20, 10:20] = np.nan
    a, _ = DepthNoise().apply(depth, FX, FY, CX, CY, np.random.default_rng(7))
    b, _ = DepthNoise().apply(depth, FX, FY, CX, CY, np.random.default_rng(7))
    np.testing.assert_array_equal(a, b)
    assert np.isnan(a[10:20, 10:20]).all() and a.dtype == np.float32
    assert 0.001 < np.isnan(a).mean() < 0.05      # random dropout + the hole's border


def test_rgb_noise_only_when_asked():
    rgb = np.full((4, 4, 3), 128, np.uint8)
    _, same = DepthNoise().apply(_plane(1.0, (4, 4)), FX, FY, 2, 2, np.random.default_rng(0), rgb)
    assert same is rgb
    _, noisy = DepthNoise(rgb_sigma=5.0).apply(_plane(1.0, (4, 4)), FX, FY, 2, 2, np.random.default_rng(0), rgb)
    assert noisy.dtype == np.uint8 and np.any(noisy != 128)


@pytest.mark.parametrize("field, value", [("k_z2", -0.1), ("sigma_0", float("nan")), ("dropout", 2.0),
                                          ("grazing_deg", 0.0)])
def test_bad_parameters_are_refused(field, value):
    with pytest.raises(ValueError, match=field):
        DepthNoise(**{field: value})


def test_on_a_real_pybullet_render():
    from sim_bridges.pybullet_backend import PyBulletBackend

    with PyBulletBackend() as sim:
        sim.load_scene("home")
        sim.reset(3)
        frame = sim.camera_frame("head_camera")
        k = frame.intrinsics
        out, _ = DepthNoise().apply(frame.depth, k.fx, k.fy, k.cx, k.cy, np.random.default_rng(0))
    valid = np.isfinite(frame.depth) & np.isfinite(out)
    assert 0.9 < np.isfinite(out).mean() < 1.0                 # some returns lost (edges, grazing, dropout)
    err = (out - frame.depth)[valid]
    assert 0.0005 < np.std(err[np.abs(err) < 0.2]) < 0.05
