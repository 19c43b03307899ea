"""SAM and CLIP backends on the REAL segment_anything / open_clip packages, tiny random weights.

The packages are imported through the scoped torchvision stand-in
(``backends/_torchvision_compat.py``) when no torchvision is installed: the tests check that
the real site-packages modules are used and that no ``torchvision`` is left in
``sys.modules`` afterwards. Models are built with the packages' own classes (``Sam``,
``ImageEncoderViT``, ``PromptEncoder``, ``MaskDecoder``, ``TwoWayTransformer``;
``open_clip.create_model`` with a registered tiny config), saved to a temporary checkpoint and
loaded back through the user-facing ``from_checkpoint`` paths.
"""

import sys
from functools import partial
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from synthetic import render  # noqa: E402

from rlstack_perception.backends import _torchvision_compat as tvc  # noqa: E402

try:
    sa = tvc.import_segment_anything()
    oc = tvc.import_open_clip()
except ImportError as exc:  # pragma: no cover - packages not installed
    pytest.skip(f"segment_anything/open_clip not importable: {exc}", allow_module_level=True)

from rlstack_perception.backends.clip import ClipEmbedder, build_clip  # noqa: E402
from rlstack_perception.backends.sam import (  # noqa: E402
    SamAutomaticSegmenter,
    SamSegmenter,
    TorchSamPredictor,
    build_sam,
    register_sam_builder,
)
from rlstack_perception.embed import TextEncoder  # noqa: E402
from rlstack_perception.pipeline import Pipeline  # noqa: E402
from rlstack_perception.segment import DepthPlaneSegmenter, FilterConfig  # noqa: E402

BOXES = [((0.0, 0.0, 0.05), (0.1, 0.1, 0.1), (255, 0, 0)), ((0.0, 0.25, 0.04), (0.08, 0.08, 0.08), (0, 0, 255))]
NO_TORCHVISION = not tvc.real_torchvision_available()


def frame_320x240():
    return render(BOXES, w=320, h=240, f=208.0)


def tiny_sam(checkpoint=None, embed_dim=32, img_size=64):
    """segment_anything's own classes, SAM's layout (as build_sam._build_sam) at toy size."""
    m = sa.modeling
    prompt_dim, patch = 32, 16
    e = img_size // patch
    sam = m.Sam(
        image_encoder=m.ImageEncoderViT(depth=1, embed_dim=embed_dim, img_size=img_size, mlp_ratio=2,
                                        norm_layer=partial(torch.nn.LayerNorm, eps=1e-6), num_heads=2,
                                        patch_size=patch, qkv_bias=True, use_rel_pos=True, global_attn_indexes=[0],
                                        window_size=2, out_chans=prompt_dim),
        prompt_encoder=m.PromptEncoder(embed_dim=prompt_dim, image_embedding_size=(e, e),
                                       input_image_size=(img_size, img_size), mask_in_chans=4),
        mask_decoder=m.MaskDecoder(num_multimask_outputs=3,
                                   transformer=m.TwoWayTransformer(depth=1, embedding_dim=prompt_dim, mlp_dim=64,
                                                                   num_heads=2),
                                   transformer_dim=prompt_dim, iou_head_depth=2, iou_head_hidden_dim=32),
        pixel_mean=[123.675, 116.28, 103.53], pixel_std=[58.395, 57.12, 57.375])
    if checkpoint is not None:
        sam.load_state_dict(torch.load(checkpoint, weights_only=True))
    return sam.eval()


register_sam_builder("tiny_test", tiny_sam)

TINY_CLIP = {"embed_dim": 16,
             "vision_cfg": {"image_size": 32, "layers": 1, "width": 32, "head_width": 16, "patch_size": 16},
             "text_cfg": {"context_length": 16, "vocab_size": 49408, "width": 32, "heads": 2, "layers": 1}}


# ---- the scoped import ---------------------------------------------------------------------

def test_real_packages_are_imported_and_no_torchvision_leaks():
    site = Path(torch.__file__).resolve().parents[1]
    for mod in (sa, oc):
        assert Path(mod.__file__).resolve().is_relative_to(site) and "site-packages" in mod.__file__
    assert sys.modules["segment_anything"] is sa and sys.modules["open_clip"] is oc
    if NO_TORCHVISION:
        assert not [k for k in sys.modules if k == "torchvision" or k.startswith("torchvision.")]
        with pytest.raises(ImportError):
            import torchvision  # noqa: F401
        assert sa.automatic_mask_generator.batched_nms is tvc.batched_nms
        assert sa.utils.transforms.resize is tvc.resize
        # inside the block it exists, afterwards it is gone again
        with tvc.torchvision_standin() as installed:
            assert installed and getattr(sys.modules["torchvision"], tvc.STANDIN_ATTR)
            import torchvision.ops.boxes  # noqa: F401
        assert "torchvision" not in sys.modules and "torchvision.ops.boxes" not in sys.modules


@pytest.mark.skipif(not NO_TORCHVISION, reason="a real torchvision is installed")
def test_standin_does_not_leak_into_other_libraries():
    import types

    try:  # open_clip imports transformers inside the window; its cached probe must still say "no torchvision"
        from transformers.utils import import_utils as iu
    except ImportError:
        iu = None
    if iu is not None:
        assert iu.is_torchvision_available() is False
    # a module (not segment_anything/open_clip) that grabs a stand-in object in the window is reported
    with pytest.warns(RuntimeWarning, match="rlstack_leaky_test_module"):
        with tvc.torchvision_standin():
            from torchvision.ops import boxes

            leaky = types.ModuleType("rlstack_leaky_test_module")
            leaky.nms = boxes.nms
            sys.modules[leaky.__name__] = leaky
    del sys.modules["rlstack_leaky_test_module"]
    assert "torchvision" not in sys.modules


@pytest.mark.skipif(not NO_TORCHVISION, reason="a real torchvision is installed")
def test_standin_placeholders_fail_clearly_and_ops_match_references():
    import open_clip.transform as oct

    with pytest.raises(NotImplementedError, match="Normalize"):
        oct.Normalize(mean=(0.5,), std=(0.5,))
    with pytest.raises(NotImplementedError, match="MaybeToTensor|ToTensor"):
        oct.MaybeToTensor()
    with pytest.raises(NotImplementedError, match="center_crop"):
        oct.F.center_crop(torch.zeros(3, 4, 4), 2)
    with pytest.raises(NotImplementedError, match="image_transform|Normalize|Resize"):
        oc.image_transform(224, is_train=False)
    assert oct.InterpolationMode.BICUBIC.value == "bicubic"
    # batched_nms against a brute-force reference
    g = torch.Generator().manual_seed(0)
    xy = torch.rand(60, 2, generator=g) * 50
    boxes = torch.cat([xy, xy + 5 + torch.rand(60, 2, generator=g) * 20], 1)
    scores, cats = torch.rand(60, generator=g), torch.randint(0, 3, (60,), generator=g)
    keep = tvc.batched_nms(boxes, scores, cats, 0.3).tolist()
    ref = []
    for i in sorted(range(60), key=lambda i: -scores[i]):
        ok = True
        for j in ref:
            if cats[i] == cats[j]:
                lt, rb = torch.max(boxes[i, :2], boxes[j, :2]), torch.min(boxes[i, 2:], boxes[j, 2:])
                inter = (rb - lt).clamp(min=0).prod()
                ok &= bool(inter / (tvc.box_area(boxes[[i]]) + tvc.box_area(boxes[[j]]) - inter) <= 0.3)
        if ok:
            ref.append(i)
    assert keep == ref
    assert tvc.box_area(torch.tensor([[0.0, 0, 2, 3]])).item() == 6
    # resize: PIL (what ResizeLongestSide uses) and tensors
    img = (np.random.default_rng(0).random((240, 320, 3)) * 255).astype(np.uint8)
    out = np.array(tvc.resize(tvc.to_pil_image(img), (48, 64)))
    assert out.shape == (48, 64, 3) and out.dtype == np.uint8
    t = tvc.resize(torch.from_numpy(img).permute(2, 0, 1), (48, 64))
    assert t.shape == (3, 48, 64) and t.dtype == torch.uint8
    assert np.abs(t.permute(1, 2, 0).numpy().astype(int) - out).mean() < 3
    assert tvc.resize(torch.zeros(1, 3, 20, 40), 10).shape == (1, 3, 10, 20)  # int = shorter edge
    # FrozenBatchNorm2d == BatchNorm2d in eval with the same statistics
    bn = torch.nn.BatchNorm2d(4).eval()
    bn.running_mean.uniform_(-1, 1), bn.running_var.uniform_(0.5, 2), bn.weight.data.uniform_(), bn.bias.data.uniform_()
    fbn = tvc.FrozenBatchNorm2d(4)
    fbn.load_state_dict(bn.state_dict())
    x = torch.randn(2, 4, 5, 5)
    assert torch.allclose(fbn(x), bn(x), atol=1e-5)


# ---- SAM -----------------------------------------------------------------------------------

def test_sam_real_predictor_masks_on_a_320x240_frame():
    torch.manual_seed(0)
    sam = tiny_sam()
    assert isinstance(sam, sa.modeling.Sam)
    f = frame_320x240()
    seg = SamSegmenter.from_model(sam, points_per_side=4, pred_iou_thresh=-1e9, nms_iou=1.01)
    assert isinstance(seg.predictor, sa.SamPredictor)
    seg.predictor.set_image(f.rgb)
    masks, iou, low = seg.predictor.predict(np.array([[160.0, 120.0]]), np.array([1]))
    assert masks.shape == (3, 240, 320) and masks.dtype == bool and iou.shape == (3,) and low.shape == (3, 16, 16)
    # our torch-only predictor gives the same answer as the package's (resize differs only by rounding)
    tp = TorchSamPredictor(sam)
    tp.set_image(f.rgb)
    lg_t, iou_t, _ = tp.predict(np.array([[160.0, 120.0]]), np.array([1]), return_logits=True)
    lg_r, iou_r, _ = seg.predictor.predict(np.array([[160.0, 120.0]]), np.array([1]), return_logits=True)
    assert np.allclose(iou_t, iou_r, atol=0.05) and np.corrcoef(lg_t.ravel(), lg_r.ravel())[0, 1] > 0.98
    segs = seg.segment(f)
    assert segs and all(s.mask.shape == (240, 320) and s.mask.dtype == bool and s.mask.any() for s in segs)
    assert all(0 <= s.stability <= 1 for s in segs)


def test_sam_automatic_mask_generator_on_a_320x240_frame():
    torch.manual_seed(0)
    seg = SamAutomaticSegmenter(tiny_sam(), points_per_side=4, points_per_batch=16, pred_iou_thresh=-1e9,
                                stability_score_thresh=-1.0, box_nms_thresh=0.7, min_mask_region_area=0)
    segs = seg.segment(frame_320x240())
    assert segs and len(segs) <= 16
    assert all(s.mask.shape == (240, 320) and s.mask.dtype == bool for s in segs)


def test_sam_loads_a_checkpoint_through_the_user_path_with_clear_errors(tmp_path):
    torch.manual_seed(1)
    sam = tiny_sam()
    ck = tmp_path / "tiny_sam.pth"
    torch.save(sam.state_dict(), ck)
    f = frame_320x240()
    for model_type in ("tiny_test", tiny_sam):  # a registered type name, or a builder callable
        seg = SamSegmenter.from_checkpoint(str(ck), model_type, points_per_side=2, pred_iou_thresh=-1e9)
        loaded = seg.predictor.model
        assert all(torch.equal(a, b) for a, b in zip(sam.state_dict().values(), loaded.state_dict().values()))
    seg.predictor.set_image(f.rgb)
    ref = SamSegmenter.from_model(sam).predictor
    ref.set_image(f.rgb)
    p = (np.array([[100.0, 80.0]]), np.array([1]))
    assert np.array_equal(seg.predictor.predict(*p)[1], ref.predict(*p)[1])
    wrapped = tmp_path / "wrapped.pth"  # {"model": state_dict} as some training scripts save
    torch.save({"model": sam.state_dict()}, wrapped)
    assert isinstance(build_sam("tiny_test", str(wrapped)), sa.modeling.Sam)
    with pytest.raises(FileNotFoundError, match="not found"):
        SamSegmenter.from_checkpoint(str(tmp_path / "missing.pth"), "tiny_test")
    bad = tmp_path / "corrupt.pth"
    bad.write_bytes(b"not a checkpoint")
    with pytest.raises(ValueError, match="could not be read"):
        SamSegmenter.from_checkpoint(str(bad), "tiny_test")
    other = tmp_path / "other.pth"
    torch.save(tiny_sam(embed_dim=48).state_dict(), other)
    with pytest.raises(ValueError, match="does not fit model type 'tiny_test'"):
        SamSegmenter.from_checkpoint(str(other), "tiny_test")
    with pytest.raises(ValueError, match="unknown SAM model type"):
        SamSegmenter.from_checkpoint(str(ck), "vit_x")
    assert set(sa.sam_model_registry) >= {"vit_b", "vit_l", "vit_h"}  # the registry users pick from


# ---- CLIP ----------------------------------------------------------------------------------

def test_clip_real_open_clip_from_checkpoint_and_in_the_pipeline(tmp_path):
    torch.manual_seed(0)
    model, tok = build_clip("rlstack-tiny-test", model_config=TINY_CLIP)
    assert isinstance(model, oc.CLIP) and isinstance(tok, oc.SimpleTokenizer)
    ck = tmp_path / "tiny_clip.pt"
    torch.save(model.state_dict(), ck)
    emb = ClipEmbedder.from_checkpoint(str(ck), "rlstack-tiny-test", model_config=TINY_CLIP)
    assert emb.image_size == 32 and emb.dim == 16
    assert all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), emb.model.state_dict().values()))
    f = frame_320x240()
    mask = np.zeros(f.depth.shape, bool)
    mask[100:140, 140:180] = True
    edge = np.zeros_like(mask)
    edge[0:8, 0:8] = True
    e = emb.embed(f.rgb, [mask, edge])
    assert e.shape == (2, 16) and e.dtype == np.float32 and np.allclose(np.linalg.norm(e, axis=1), 1, atol=1e-5)
    t = emb.encode_text(["red cube", "a blue cube"])
    assert t.shape == (2, 16) and np.allclose(np.linalg.norm(t, axis=1), 1, atol=1e-5)
    with torch.no_grad():  # same numbers as the open_clip model itself
        ref = model.encode_text(tok(["red cube"])).float()
    assert np.allclose(t[0], (ref / ref.norm()).numpy()[0], atol=1e-5)
    pipe = Pipeline(DepthPlaneSegmenter(), emb, TextEncoder(emb.encode_text), filter_config=FilterConfig(min_area=20),
                    labels=["red cube", "blue cube"], reject_background=False)
    res = pipe.process(f)
    assert len(res.detections) == 2 and len(pipe.map) == 2 and len(pipe.query("red cube")) >= 1
    # errors
    with pytest.raises(FileNotFoundError):
        ClipEmbedder.from_checkpoint(str(tmp_path / "missing.pt"), "rlstack-tiny-test")
    bad = tmp_path / "corrupt.pt"
    bad.write_bytes(b"garbage")
    with pytest.raises(ValueError, match="could not be"):
        ClipEmbedder.from_checkpoint(str(bad), "rlstack-tiny-test")
    other_cfg = dict(TINY_CLIP, embed_dim=24)
    other, _ = build_clip("rlstack-tiny-test-24", model_config=other_cfg)
    torch.save(other.state_dict(), tmp_path / "other.pt")
    with pytest.raises(ValueError, match="does not fit"):
        ClipEmbedder.from_checkpoint(str(tmp_path / "other.pt"), "rlstack-tiny-test")
    with pytest.raises(ValueError, match="unknown CLIP model"):
        ClipEmbedder.from_checkpoint(str(ck), "no-such-model")


def test_real_tiny_sam_and_clip_end_to_end():
    torch.manual_seed(0)
    model, tok = build_clip("rlstack-tiny-test", model_config=TINY_CLIP)
    emb = ClipEmbedder.from_open_clip(model, tok)
    pipe = Pipeline(SamSegmenter.from_model(tiny_sam(), points_per_side=4, pred_iou_thresh=-1e9),
                    emb, TextEncoder(emb.encode_text), filter_config=FilterConfig(min_area=20, min_stability=0.0),
                    labels=["red cube"], reject_background=False)
    res = pipe.process(frame_320x240())
    assert res.segments and all(s.mask.shape == (240, 320) for s in res.segments)
    assert all(np.all(np.isfinite(d.position)) for d in res.detections)


def test_evaluation_runs_with_a_user_clip_checkpoint_and_downloads_nothing(tmp_path, monkeypatch, capsys):
    """`python -m rlstack_perception.evaluate --embedder clip` with a user checkpoint (here tiny
    random weights from a .json model config) runs the whole evaluation on real PyBullet, offline;
    the cosine threshold for it is calibrated on training wordings by train_query_head --calibrate-clip."""
    import json
    import socket

    from rlstack_perception import evaluate, train_query_head

    def no_network(*a, **k):
        raise AssertionError("network access during a CLIP evaluation")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    torch.manual_seed(0)
    cfg = tmp_path / "rlstack-tiny-eval.json"
    cfg.write_text(json.dumps(TINY_CLIP))
    model, _ = build_clip("rlstack-tiny-eval", model_config=str(cfg))
    ck = tmp_path / "user_clip.pt"
    torch.save(model.state_dict(), ck)
    assert train_query_head.main(["--calibrate-clip", str(ck), "--clip-model", str(cfg)]) == 0
    cal = json.loads(capsys.readouterr().out)
    assert -1.0 <= cal["match_threshold"] <= 1.0 and 0.0 <= cal["train_absent_false_match"] <= 1.0
    out = tmp_path / "eval.json"
    assert evaluate.main(["--layouts", "1", "--views", "1", "--scenes", "panda_table", "--embedder", "clip",
                          "--clip-checkpoint", str(ck), "--clip-model", str(cfg),
                          "--match-threshold", str(cal["match_threshold"]), "--json", str(out)]) == 0
    res = json.loads(out.read_text())["panda_table"]
    assert res["frames"] > 0 and res["match_threshold"] == pytest.approx(cal["match_threshold"])
    for k in ("retrieval_top1_trained", "heldout_colour_synonyms_top1", "absent_false_match_rate"):
        assert 0.0 <= res[k] <= 1.0
    with pytest.raises(FileNotFoundError, match="CLIP checkpoint not found"):
        evaluate.main(["--layouts", "1", "--scenes", "panda_table", "--embedder", "clip",
                       "--clip-checkpoint", str(tmp_path / "missing.pt")])
