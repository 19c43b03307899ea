"""Image observation terms in the policy core (no rclpy): a pixel bundle (a small ONNX graph with an
uint8 image input, built with the onnx package, run by onnxruntime) wired from sensor_msgs/Image
messages: preprocessing shared with training, stacking by stamp, and the safety rules (waiting,
incomplete stack, wrong encoding or size rejected with a reason, gaps, stale images)."""

from __future__ import annotations

import numpy as np
import pytest
import yaml
from sensor_msgs.msg import Image, JointState

from rlstack_bundle.images import ImageSpec, preprocess
from rlstack_bundle.terms import ActTerm, ObsTerm, Source, io_descriptor
from rlstack_policy import runner

SPEC = ImageSpec("cam", "/cam/image_raw", "rgb8", 32, 24, crop=(4, 2, 16, 16), resize=(8, 8),
                 stack_depth=2, stack_stride=1, input="image")
PERIOD = 1.0 / 30.0


def _bundle(tmp_path):
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    js = "sensor_msgs/msg/JointState"
    obs = [ObsTerm(n, "rad", "f", Source("/joint_states", js, "position", key=n)) for n in ("a", "b")]
    act = [ActTerm(n, "rad", Source("/cmd", "geometry_msgs/msg/Vector3", n), limits=(-0.25, 0.25), scale=0.25)
           for n in ("x", "y")]
    d = tmp_path / "pix"
    d.mkdir()
    # action = tanh(0.1 * (a + b) + mean(newest frame's red channel) / 255 - mean(oldest frame's red) / 255)
    w = helper.make_tensor("w", TensorProto.FLOAT, [2, 2], [0.1] * 4)
    k = helper.make_tensor("k", TensorProto.FLOAT, [], [1.0 / 255.0])
    nodes = [
        helper.make_node("MatMul", ["obs", "w"], ["lin"]),
        helper.make_node("Cast", ["image"], ["f"], to=TensorProto.FLOAT),
        helper.make_node("Slice", ["f", "s0", "e0", "ax"], ["old"]),
        helper.make_node("Slice", ["f", "s1", "e1", "ax"], ["new"]),
        helper.make_node("Sub", ["new", "old"], ["dif"]),
        helper.make_node("ReduceMean", ["dif"], ["m"], axes=[1, 2, 3], keepdims=1),
        helper.make_node("Flatten", ["m"], ["m1"], axis=1),
        helper.make_node("Mul", ["m1", "k"], ["ms"]),
        helper.make_node("Add", ["lin", "ms"], ["pre"]),
        helper.make_node("Tanh", ["pre"], ["action"]),
    ]
    ints = lambda name, v: helper.make_tensor(name, TensorProto.INT64, [1], [v])  # noqa: E731
    graph = helper.make_graph(nodes, "pix", [
        helper.make_tensor_value_info("obs", TensorProto.FLOAT, ["batch", 2]),
        helper.make_tensor_value_info("image", TensorProto.UINT8, ["batch", 6, 8, 8]),
    ], [helper.make_tensor_value_info("action", TensorProto.FLOAT, ["batch", 2])],
        initializer=[w, k, ints("s0", 0), ints("e0", 1), ints("s1", 3), ints("e1", 4), ints("ax", 1)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(d / "policy.onnx"))
    (d / "io.yaml").write_text(yaml.safe_dump(io_descriptor("pix", "Pix-v0", 30.0, obs, act, False, images=[SPEC]),
                                              sort_keys=False))
    prov = {k: 0 for k in ("task", "env_id", "algorithm", "seed", "timesteps", "commit", "hyperparameters",
                           "wall_time_s", "machine")}
    prov["policy_onnx_sha256"] = ""
    (d / "provenance.yaml").write_text(yaml.safe_dump(prov))
    (d / "evaluation.yaml").write_text("episodes: 0\nseeds: []\nsuccess_rate: 0\n")
    (d / "MODEL_CARD.md").write_text("test\n")
    return d


def image(t, red=0, encoding="rgb8", w=32, h=24, step=None, pad=0):
    msg = Image(encoding=encoding, width=w, height=h)
    msg.header.stamp.sec, msg.header.stamp.nanosec = int(t), int(round((t - int(t)) * 1e9))
    px = np.zeros((h, w, 3), np.uint8)
    px[:, :, 0] = red
    rows = np.zeros((h, w * 3 + pad), np.uint8)
    rows[:, :w * 3] = px.reshape(h, -1)
    msg.step = step if step is not None else w * 3 + pad
    msg.data = rows.tobytes()
    return msg


def joints(a=0.1, b=0.2):
    return JointState(name=["a", "b"], position=[a, b], velocity=[0.0, 0.0])


@pytest.fixture
def loaded(tmp_path):
    return runner.prepare(str(_bundle(tmp_path)), runner.ServeOptions())


def test_image_term_is_wired_as_an_image_subscription(loaded):
    assert loaded.obs_plan.topics == {"/joint_states": "sensor_msgs/msg/JointState",
                                      "/cam/image_raw": "sensor_msgs/msg/Image"}
    (im,) = loaded.obs_plan.images
    assert im.spec == SPEC


def test_stack_by_stamp_feeds_the_network_what_training_computes(loaded):
    asm = loaded.assembler
    asm.update("/joint_states", joints(), 0.0)
    cmd, fault = runner.control_step(loaded, 0.0, False)
    assert fault == "waiting for /cam/image_raw" and np.allclose(cmd, 0.0)
    asm.update("/cam/image_raw", image(1.0, red=0, pad=4), 1.0)     # padded rows (step > width * 3) are fine
    asm.update("/joint_states", joints(), 1.0)
    cmd, fault = runner.control_step(loaded, 1.0, False)
    assert "has 1 of 2 frames" in fault
    asm.update("/cam/image_raw", image(1.0 + PERIOD, red=200), 1.0 + PERIOD)
    asm.update("/joint_states", joints(), 1.0 + PERIOD)
    cmd, fault = runner.control_step(loaded, 1.0 + PERIOD, False)
    assert fault is None
    frames = [preprocess(np.dstack([np.full((24, 32), r, np.uint8), np.zeros((24, 32, 2), np.uint8)]), SPEC)
              for r in (0, 200)]
    want = loaded.bundle.act(np.array([0.1, 0.2], np.float32), {"image": np.concatenate(frames)})
    assert np.allclose(want, np.tanh(0.03 + 200 / 255), atol=1e-5)             # newest red minus oldest red
    assert np.allclose(cmd, 0.25 * want, atol=1e-6)


def test_wrong_encoding_or_size_is_rejected_with_the_reason(loaded):
    asm = loaded.assembler
    asm.update("/cam/image_raw", image(1.0), 1.0)
    asm.update("/cam/image_raw", image(1.0 + PERIOD), 1.0 + PERIOD)
    asm.update("/joint_states", joints(), 1.0 + PERIOD)
    assert runner.control_step(loaded, 1.0 + PERIOD, False)[1] is None
    asm.update("/joint_states", joints(), 1.1)
    assert asm.update("/cam/image_raw", image(1.1, encoding="bgr8"), 1.1) == "bad_image"
    assert asm.topics["/cam/image_raw"].error == \
        "image 'cam' on /cam/image_raw: encoding 'bgr8', the bundle expects 'rgb8'"
    cmd, fault = runner.control_step(loaded, 1.1, False)
    assert fault == "bad_image on /cam/image_raw" and np.allclose(cmd, 0.0)
    assert asm.update("/cam/image_raw", image(1.1, w=64, h=48), 1.1) == "bad_image"
    assert "size 64x48, the bundle expects 32x24" in asm.topics["/cam/image_raw"].error
    assert asm.update("/cam/image_raw", image(1.0), 1.1) == "out_of_order"    # older than the newest frame
    asm.update("/cam/image_raw", image(1.0 + 2 * PERIOD), 1.0 + 2 * PERIOD)   # a good frame: back in control
    asm.update("/joint_states", joints(), 1.0 + 2 * PERIOD)
    assert runner.control_step(loaded, 1.0 + 2 * PERIOD, False)[1] is None


def test_dropped_frames_and_stale_images_give_the_safe_action(loaded):
    asm = loaded.assembler
    for i in range(3):
        asm.update("/cam/image_raw", image(1.0 + i * PERIOD), 1.0 + i * PERIOD)
        asm.update("/joint_states", joints(), 1.0 + i * PERIOD)
    assert runner.control_step(loaded, 1.0 + 2 * PERIOD, False)[1] is None
    t = 1.0 + 4 * PERIOD                                                     # frame 3 dropped
    asm.update("/cam/image_raw", image(t), t)
    asm.update("/joint_states", joints(), t)
    cmd, fault = runner.control_step(loaded, t, False)
    assert "image stack gap on /cam/image_raw" in fault and np.allclose(cmd, 0.0)
    asm.update("/cam/image_raw", image(t + PERIOD), t + PERIOD)
    asm.update("/joint_states", joints(), t + PERIOD)
    assert runner.control_step(loaded, t + PERIOD, False)[1] is None
    later = t + PERIOD + 10 * PERIOD                                         # the camera stopped
    asm.update("/joint_states", joints(), later)
    cmd, fault = runner.control_step(loaded, later, False)
    assert fault.startswith("stale /cam/image_raw") and runner.fault_reason(fault) == "stale"
