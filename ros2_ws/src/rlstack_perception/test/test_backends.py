"""SAM and CLIP code paths with tiny randomly initialised torch modules of the same call signatures.

What this proves: our predictor wiring (resize/normalise/pad, prompt -> decoder -> postprocess),
the automatic mask generation (grid, best-of-3 by IoU, stability, NMS), CLIP pre-processing
and text/image encoding, and that both plug into the pipeline and the map. The real
segment_anything / open_clip classes, checkpoints and the torchvision stand-in are tested in
test_backends_real.py.
"""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
from synthetic import render  # noqa: E402
from torch import nn  # noqa: E402

from rlstack_perception.backends.clip import ClipEmbedder  # noqa: E402
from rlstack_perception.backends.sam import SamSegmenter, TorchSamPredictor  # noqa: E402
from rlstack_perception.embed import TextEncoder  # noqa: E402
from rlstack_perception.pipeline import Pipeline  # noqa: E402
from rlstack_perception.segment import FilterConfig  # noqa: E402

BOXES = [((0.0, 0.0, 0.05), (0.1, 0.1, 0.1), (255, 0, 0))]


class TinyImageEncoder(nn.Module):
    img_size = 64

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 16, stride=16)

    def forward(self, x):
        assert x.shape[-2:] == (64, 64)
        return self.conv(x)  # (1, 8, 4, 4)


class TinyPromptEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(2, 8)

    def get_dense_pe(self):
        return torch.zeros(1, 8, 4, 4)

    def forward(self, points, boxes, masks):
        coords, labels = points
        assert coords.shape[-1] == 2 and labels.shape == coords.shape[:2] and boxes is None and masks is None
        return self.lin(coords / 64.0), torch.zeros(1, 8, 4, 4)


class TinyMaskDecoder(nn.Module):
    """Low-res logits: a blob around the prompt (so masks are deterministic and sensible)."""

    def forward(self, image_embeddings, image_pe, sparse_prompt_embeddings, dense_prompt_embeddings,
                multimask_output):
        assert image_embeddings.shape[1] == image_pe.shape[1] == 8
        n = 3 if multimask_output else 1
        ys, xs = torch.meshgrid(torch.arange(16.0), torch.arange(16.0), indexing="ij")
        c = self.prompt / 4.0 - 0.375  # input px (64) -> low-res (16) pixel centres
        d = torch.sqrt((xs - c[0]) ** 2 + (ys - c[1]) ** 2)
        logits = torch.stack([(r - d) * 2 for r in (2.0, 3.0, 4.0)[:n]])[None]
        iou = torch.tensor([[0.8, 0.95, 0.6][:n]])
        return logits, iou


class TinySam(nn.Module):
    mask_threshold = 0.0

    def __init__(self):
        super().__init__()
        self.image_encoder = TinyImageEncoder()
        self.prompt_encoder = TinyPromptEncoder()
        self.mask_decoder = TinyMaskDecoder()
        self.register_buffer("pixel_mean", torch.tensor([123.7, 116.3, 103.5]))
        self.register_buffer("pixel_std", torch.tensor([58.4, 57.1, 57.4]))
        orig = self.prompt_encoder.forward

        def pe(points, boxes, masks):
            self.mask_decoder.prompt = points[0][0, 0]
            return orig(points, boxes, masks)
        self.prompt_encoder.forward = pe

    def postprocess_masks(self, masks, input_size, original_size):  # as segment_anything.Sam
        masks = nn.functional.interpolate(masks, (64, 64), mode="bilinear", align_corners=False)
        masks = masks[..., : input_size[0], : input_size[1]]
        return nn.functional.interpolate(masks, original_size, mode="bilinear", align_corners=False)


def test_sam_predictor_and_automatic_masks_with_a_tiny_sam():
    torch.manual_seed(0)
    f = render(BOXES)
    pred = TorchSamPredictor(TinySam())
    pred.set_image(f.rgb)
    assert pred.input_size == (48, 64) and pred.original_size == (120, 160)
    masks, iou, low = pred.predict(np.array([[80.0, 60.0]]), np.array([1]))
    assert masks.shape == (3, 120, 160) and masks.dtype == bool and iou.shape == (3,) and low.shape == (3, 16, 16)
    # the mask is centred on the prompt (coordinates scaled through the resize correctly)
    ys, xs = np.nonzero(masks[1])
    assert abs(xs.mean() - 80) < 4 and abs(ys.mean() - 60) < 4
    seg = SamSegmenter(pred, points_per_side=4, nms_iou=0.5)
    segs = seg.segment(f)
    assert len(segs) == 16  # disjoint blobs on a 4x4 grid: none suppressed
    assert all(0 < s.stability <= 1 and s.score == pytest.approx(0.95) for s in segs)
    seg_dup = SamSegmenter(pred, points_per_side=12, nms_iou=0.2)
    assert len(seg_dup.segment(f)) < 144  # overlapping blobs are suppressed


def test_sam_from_checkpoint_errors_are_clear(tmp_path):
    with pytest.raises(FileNotFoundError):
        SamSegmenter.from_checkpoint(str(tmp_path / "none.pth"))
    ck = tmp_path / "sam.pth"
    ck.write_bytes(b"x")
    # the real package is imported through the scoped torchvision stand-in; the file is read first
    with pytest.raises(ValueError, match="could not be read"):
        SamSegmenter.from_checkpoint(str(ck))


class TinyClip(nn.Module):
    def __init__(self, dim=16):
        super().__init__()
        self.visual = nn.Sequential(nn.Conv2d(3, 8, 8, stride=8), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                                    nn.Linear(8, dim))
        self.tok = nn.EmbeddingBag(1000, dim)

    def encode_image(self, x):
        assert x.shape[1:] == (3, 32, 32)
        return self.visual(x)

    def encode_text(self, tokens):
        return self.tok(tokens)


def tiny_tokenizer(texts):
    return torch.tensor([[hash(w) % 1000 for w in (t.lower().split() + ["<eos>"] * 8)[:8]] for t in texts])


def test_clip_embedder_with_a_tiny_clip_and_in_the_pipeline():
    torch.manual_seed(0)
    emb = ClipEmbedder(TinyClip(), tiny_tokenizer, image_size=32)
    f = render(BOXES)
    mask = np.zeros(f.depth.shape, bool)
    mask[50:70, 70:90] = True
    edge = np.zeros_like(mask)
    edge[0:5, 0:5] = True  # crop reaching outside the image is padded, not an error
    e = emb.embed(f.rgb, [mask, edge])
    assert e.shape == (2, 16) and np.allclose(np.linalg.norm(e, axis=1), 1, atol=1e-5)
    t = emb.encode_text(["red cube", "blue ball"])
    assert t.shape == (2, 16) and np.allclose(np.linalg.norm(t, axis=1), 1, atol=1e-5)
    # the pipeline runs with the CLIP text tower as its text encoder
    from rlstack_perception.segment import DepthPlaneSegmenter

    pipe = Pipeline(DepthPlaneSegmenter(), emb, TextEncoder(emb.encode_text), filter_config=FilterConfig(min_area=20),
                    labels=["red cube", "blue ball"], reject_background=False)
    res = pipe.process(f)
    assert len(res.detections) == 1 and len(pipe.map) == 1
    assert len(pipe.query("red cube")) == 1


def test_pipeline_with_tiny_sam_runs_end_to_end():
    f = render(BOXES)
    emb = ClipEmbedder(TinyClip(), tiny_tokenizer, image_size=32)
    pipe = Pipeline(SamSegmenter(TorchSamPredictor(TinySam()), points_per_side=4), emb, TextEncoder(emb.encode_text),
                    filter_config=FilterConfig(min_area=20, min_stability=0.0), labels=["red cube"],
                    reject_background=False)
    res = pipe.process(f)
    assert len(res.segments) == 16 and len(pipe.map) >= 1
    assert all(np.all(np.isfinite(d.position)) for d in res.detections)
