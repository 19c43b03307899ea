"""Image observation terms: the shared preprocessing (crop, area resize, channels first), decoding
of sensor_msgs/Image fields, stacking by stamp, and the validator's checks of image terms and the
ONNX image inputs (a small ONNX graph built with the onnx package, run by onnxruntime)."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import yaml

from rlstack_bundle.bundle import BundleError, load
from rlstack_bundle.images import FrameStack, ImageError, ImageSpec, area_resize, check_term, decode, preprocess
from rlstack_bundle.terms import ActTerm, ObsTerm, Source, io_descriptor

SPEC = ImageSpec("cam", "/cam/image_raw", "rgb8", 32, 24, crop=(4, 2, 16, 16), resize=(8, 8),
                 stack_depth=2, stack_stride=1, input="image")


def test_area_resize_is_the_block_mean_and_keeps_the_mean():
    rng = np.random.default_rng(0)
    img = rng.integers(0, 256, (16, 16, 3), dtype=np.uint8)
    out = area_resize(img, 8, 8)
    want = img.astype(float).reshape(8, 2, 8, 2, 3).mean(axis=(1, 3))
    assert out.dtype == np.uint8 and out.shape == (8, 8, 3)
    assert np.abs(out.astype(float) - want).max() <= 0.5
    odd = area_resize(img, 5, 7)               # non-integer ratios: every output pixel a weighted box
    assert odd.shape == (7, 5, 3)
    assert abs(odd.astype(float).mean() - img.astype(float).mean()) < 1.0
    flat = np.full((13, 11, 3), 77, np.uint8)
    assert np.all(area_resize(flat, 4, 3) == 77)


def test_preprocess_crops_resizes_and_puts_channels_first():
    frame = np.zeros((24, 32, 3), np.uint8)
    frame[2:4, 4:6] = (255, 0, 0)              # the crop's top-left 2x2 block is red
    out = preprocess(frame, SPEC)
    assert out.shape == (3, 8, 8) and out.dtype == np.uint8
    assert out[0, 0, 0] == 255 and out[1, 0, 0] == 0 and out[0, 1, 1] == 0
    window = frame[2:18, 4:20]
    assert np.array_equal(preprocess(window, SPEC, cropped=True), out)   # a training env renders the window only
    with pytest.raises(ImageError, match="frame is 16x16, the bundle expects 32x24"):
        preprocess(window, SPEC)


def test_decode_checks_encoding_size_and_length():
    img = np.arange(24 * 32 * 3, dtype=np.uint32).astype(np.uint8).reshape(24, 32, 3)
    padded = np.zeros((24, 100), np.uint8)     # rows padded: step 100 > 32 * 3
    padded[:, :96] = img.reshape(24, 96)
    assert np.array_equal(decode(SPEC, "rgb8", 24, 32, 100, padded.tobytes()), img)
    with pytest.raises(ImageError, match="encoding 'bgr8', the bundle expects 'rgb8'"):
        decode(SPEC, "bgr8", 24, 32, 96, img.tobytes())
    with pytest.raises(ImageError, match="size 64x48, the bundle expects 32x24"):
        decode(SPEC, "rgb8", 48, 64, 192, bytes(48 * 192))
    with pytest.raises(ImageError, match="bytes with step 96"):
        decode(SPEC, "rgb8", 24, 32, 96, img.tobytes()[:-5])


def test_frame_stack_by_stamp():
    st = FrameStack(ImageSpec(**{**SPEC.__dict__, "stack_depth": 3, "stack_stride": 2}), period_s=0.1)
    f = [np.full((3, 8, 8), i, np.uint8) for i in range(8)]
    for i in range(4):
        assert st.push(0.1 * i, f[i]) is None
    x, why = st.stack()
    assert x is None and "4 of 5 frames" in why
    st.push(0.4, f[4])
    x, why = st.stack()
    assert why is None and x.shape == (9, 8, 8)
    assert [int(x[3 * k, 0, 0]) for k in range(3)] == [0, 2, 4]      # oldest first, every second frame
    assert st.push(0.4, f[5]) == "out_of_order"
    st.push(0.7, f[5])                                               # a dropped frame: 0.5 and 0.6 missing
    x, why = st.stack()
    assert x is None and "gap" in why and "expected 200 ms" in why
    st.fill(1.0, f[7])
    x, why = st.stack()
    assert why is None and np.all(x == 7)


def _term() -> dict:
    return SPEC.to_dict()


@pytest.mark.parametrize("edit, problem", [
    (lambda d: d.update(encoding="yuv422"), "encoding must be one of"),
    (lambda d: d.update(channel_order="bgr"), "channel_order must be 'rgb'"),
    (lambda d: d["crop"].update(x=20), "does not lie inside the 32x24 frame"),
    (lambda d: d["resize"].update(width=40), "larger than the crop"),
    (lambda d: d["stack"].update(depth=0), "stack must be"),
    (lambda d: d.update(input="obs"), "input must name an ONNX input other than 'obs'"),
    (lambda d: d["source"].update(type="sensor_msgs/msg/CompressedImage"), "source.type must be"),
    (lambda d: d.pop("crop"), "missing ['crop']"),
])
def test_check_term_names_the_problem(edit, problem):
    d = copy.deepcopy(_term())
    assert check_term(d) == []
    edit(d)
    assert any(problem in p for p in check_term(d)), check_term(d)


def _pixel_onnx(path, n_obs=2, image_shape=(6, 8, 8), image_name="image"):
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    w = helper.make_tensor("w", TensorProto.FLOAT, [n_obs, 2], [0.1] * (2 * n_obs))
    k = helper.make_tensor("k", TensorProto.FLOAT, [], [1.0 / 255.0])
    nodes = [
        helper.make_node("MatMul", ["obs", "w"], ["lin"]),
        helper.make_node("Cast", [image_name], ["imgf"], to=TensorProto.FLOAT),
        helper.make_node("ReduceMean", ["imgf"], ["m"], axes=[1, 2, 3], keepdims=1),
        helper.make_node("Flatten", ["m"], ["m1"], axis=1),
        helper.make_node("Mul", ["m1", "k"], ["ms"]),
        helper.make_node("Add", ["lin", "ms"], ["pre"]),
        helper.make_node("Tanh", ["pre"], ["action"]),
    ]
    graph = helper.make_graph(nodes, "pixel", [
        helper.make_tensor_value_info("obs", TensorProto.FLOAT, ["batch", n_obs]),
        helper.make_tensor_value_info(image_name, TensorProto.UINT8, ["batch", *image_shape]),
    ], [helper.make_tensor_value_info("action", TensorProto.FLOAT, ["batch", 2])], initializer=[w, k])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(path))


def _pixel_bundle(tmp_path, **onnx_kw):
    js = "sensor_msgs/msg/JointState"
    obs = [ObsTerm("a", "rad", "f", Source("/joint_states", js, "position", key="a")),
           ObsTerm("b", "rad", "f", Source("/joint_states", js, "position", key="b"))]
    act = [ActTerm(n, "rad", Source("/cmd", "geometry_msgs/msg/Vector3", n), limits=(-0.25, 0.25), scale=0.25)
           for n in ("x", "y")]
    io = io_descriptor("pix", "Pix-v0", 30.0, obs, act, False, images=[SPEC])
    d = tmp_path / "pix"
    d.mkdir(parents=True)
    _pixel_onnx(d / "policy.onnx", **onnx_kw)
    with open(d / "io.yaml", "w") as f:
        yaml.safe_dump(io, f, sort_keys=False)
    prov = {k: 0 for k in ("task", "env_id", "algorithm", "seed", "timesteps", "commit", "hyperparameters",
                           "wall_time_s", "machine")}
    prov["policy_onnx_sha256"] = ""
    for name, data in (("provenance.yaml", prov), ("evaluation.yaml", {"episodes": 0, "seeds": [], "success_rate": 0})):
        with open(d / name, "w") as f:
            yaml.safe_dump(data, f)
    (d / "MODEL_CARD.md").write_text("test\n")
    return d


def _problems(path) -> str:
    with pytest.raises(BundleError) as exc:
        load(str(path))
    return "\n".join(exc.value.problems)


def test_pixel_bundle_loads_and_acts_on_images(tmp_path):
    b = load(str(_pixel_bundle(tmp_path)))
    (spec,) = b.image_specs
    assert spec == SPEC
    dark = b.act(np.zeros(2, np.float32), {"image": np.zeros(spec.input_shape, np.uint8)})
    bright = b.act(np.zeros(2, np.float32), {"image": np.full(spec.input_shape, 255, np.uint8)})
    assert dark.shape == (2,) and np.allclose(dark, 0.0) and np.allclose(bright, np.tanh(1.0), atol=1e-6)


def test_validator_checks_image_terms_against_the_model(tmp_path):
    d = _pixel_bundle(tmp_path, image_shape=(3, 8, 8))        # one frame in the model, two in io.yaml
    assert "input 'image' is tensor(uint8) [None, 3, 8, 8], io.yaml declares uint8 [None, 6, 8, 8]" in _problems(d)
    d2 = _pixel_bundle(tmp_path / "b", image_name="pixels")
    assert "expected input(s) ['obs', 'image'], got ['obs', 'pixels']" in _problems(d2)
    with open(d2 / "io.yaml") as f:
        io = yaml.safe_load(f)
    io["image_observation"][0]["crop"]["width"] = 400
    io["model"]["image_inputs"][0]["shape"][1] = 9
    with open(d2 / "io.yaml", "w") as f:
        yaml.safe_dump(io, f)
    text = _problems(d2)
    assert "does not lie inside the 32x24 frame" in text
    del io["model"]["image_inputs"]
    io["image_observation"][0]["crop"]["width"] = 16
    with open(d2 / "io.yaml", "w") as f:
        yaml.safe_dump(io, f)
    assert "model.image_inputs must list the ONNX input of every image term" in _problems(d2)
