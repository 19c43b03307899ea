"""The query side: which of the map's colours and shapes a text query accepts (NumPy, no torch).

``QueryHead`` maps a query's MiniLM embedding (384-d, the same text encoder the crop embedder
is aligned with) through a small MLP to sigmoid "compatibility" outputs, one per colour
(``COLOURS``) and kind of object (the head's card lists its ``kinds``: ``KINDS``; a card without
the list means the three ``SHAPES``). A label "red cube" scores ``p(red) * p(cube)``. Trained by
:mod:`rlstack_perception.train_query_head` on generated wordings (synonyms, fillers, word order,
category words, absent colours and kinds; never the held-out set), so that

* "could you fetch that crimson box for me" scores the red cube ~1 and every other label ~0,
* "the red thing" accepts every red object, "the ball" every ball,
* "the purple elephant" or "the red mug" accepts nothing: every object scores ~0, and a
  threshold (``match_threshold``, calibrated on training wordings, in the card) makes that
  "no match".

The weights are a ``.npz`` (W1, b1, W2, b2) with a JSON card next to it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Optional, Sequence

import numpy as np

from rlstack_perception.embed import COLOURS, SHAPES, WEIGHTS_DIR

DEFAULT_QUERY_HEAD = WEIGHTS_DIR / "query_head.npz"


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.clip(x, -60.0, 60.0)))


class QueryHead:
    """``colour_words``: ground colour names through the xkcd survey (:mod:`rlstack_perception.colour_words`);
    the head's own colour outputs are used only when the query names no colour the survey knows.
    ``shape_words``: a shape named by a WordNet synonym of a training shape word
    (:mod:`rlstack_perception.shape_words`) is accepted whatever the head says. ``noun_words``: the
    query's head noun read through the WordNet noun table (:mod:`rlstack_perception.noun_words`,
    :class:`~rlstack_perception.noun_words.NounRule` modes): "heads" (the default): "reject" and
    "accept" both; "reject": a head noun that is-a training absent kind ("the red goblet") accepts no
    kind; "accept": a head noun the head never saw that is-a training word of a kind accepts that
    kind ("the soup can" is a cylinder); "full": both, and a noun that only modifies another
    ("tennis *ball* can") does not ground the query; "off" (or False): none. Measured:
    docs/results.md; the choice: docs/design/rare-object-nouns.md."""

    def __init__(self, path: os.PathLike | str = DEFAULT_QUERY_HEAD, colour_words: bool = True,
                 shape_words: bool = True, noun_words: bool | str = "heads") -> None:
        self.path = Path(path)
        self.colour_rule = None
        self.shape_rule = None
        self.noun_rule = None
        self._shade_nouns: Optional[frozenset] = None   # built on first use (canonical)
        if colour_words:
            from rlstack_perception import wordings as W
            from rlstack_perception.colour_words import ColourRule

            self.colour_rule = ColourRule.default()
            self._not_colours = W.NOT_COLOUR_PHRASES
            self._thing_phrases = W.THING_PHRASES
        if not self.path.is_file():
            raise FileNotFoundError(f"query head weights not found: {self.path} (train with "
                                    "python -m rlstack_perception.train_query_head)")
        try:
            with np.load(self.path) as d:
                self.w1, self.b1, self.w2, self.b2 = (np.asarray(d[k], np.float32) for k in ("W1", "b1", "W2", "b2"))
        except (KeyError, ValueError, OSError) as exc:
            raise ValueError(f"query head {self.path} could not be read: {exc}") from None
        self.dim = int(self.w1.shape[0]) if self.w1.ndim == 2 else 0
        card = self.path.with_suffix(".json")
        self.card = json.loads(card.read_text()) if card.is_file() else {}
        self.threshold = float(self.card.get("match_threshold", 0.5))
        #: the kinds of object the head scores (its card; a card without the list: the three shapes)
        self.kinds = tuple(self.card.get("kinds", SHAPES))
        if self.w1.ndim != 2 or self.w2.shape != (self.w1.shape[1], len(COLOURS) + len(self.kinds)):
            raise ValueError(f"query head {self.path}: bad shapes {self.w1.shape}, {self.w2.shape} for "
                             f"{len(COLOURS)} colours and {len(self.kinds)} kinds")
        if shape_words:
            from rlstack_perception.shape_words import ShapeRule

            self.shape_rule = ShapeRule(kinds=self.kinds)
        mode = {False: "off", True: "full"}[noun_words] if isinstance(noun_words, bool) else str(noun_words)
        from rlstack_perception.noun_words import NOUN_RULE_MODES, NounRule

        if mode not in ("off",) + NOUN_RULE_MODES:
            raise ValueError(f"noun_words must be off, {', '.join(NOUN_RULE_MODES[:-1])} or {NOUN_RULE_MODES[-1]}, "
                             f"got {mode!r}")
        if mode != "off":
            self.noun_rule = NounRule(kinds=self.kinds, mode=mode)

    def canonical(self, text: str) -> str:
        """The wording this head reads best (:func:`~rlstack_perception.query_text.canonical_query`):
        embed this, and score it with :meth:`label_scores`. A no-op on every training wording."""
        from rlstack_perception.query_text import canonical_query, shade_nouns_of, training_colour_phrases

        if self.colour_rule is None:
            return canonical_query(text)
        if self._shade_nouns is None:
            self._shade_nouns = shade_nouns_of(self.noun_rule.lex.units) if self.noun_rule is not None else frozenset()
        return canonical_query(text, self.colour_rule, self._thing_phrases, self._shade_nouns,
                               training_colour_phrases())

    def compat(self, text_embeddings: np.ndarray) -> np.ndarray:
        """(N, colours + kinds) in [0, 1]: colours (``COLOURS``) then the head's ``kinds``."""
        x = np.atleast_2d(np.asarray(text_embeddings, np.float32))
        if x.shape[1] != self.dim:
            raise ValueError(f"query head expects {self.dim}-d text embeddings, got {x.shape[1]}-d "
                             "(the head is for the MiniLM text space of the crop_cnn embedder)")
        h = np.maximum(x @ self.w1 + self.b1, 0.0)
        return _sigmoid(h @ self.w2 + self.b2)

    def query_compat(self, text: str, text_embedding: np.ndarray) -> np.ndarray:
        """(colours + kinds,) compatibility of one query: the head, with the colour part from the
        colour-word rule when the text names a colour."""
        c = self.compat(text_embedding)[0].copy()
        if self.colour_rule is not None:
            cr = self.colour_rule.compat(text, self._not_colours)
            if cr is not None:
                c[:len(COLOURS)] = cr
        if self.shape_rule is not None:
            c[len(COLOURS):] = self.shape_rule.apply(text, c[len(COLOURS):])
        if self.noun_rule is not None:
            c[len(COLOURS):] = self.noun_rule.apply(text, c[len(COLOURS):])
        return c

    def label_scores(self, text: str, text_embedding: np.ndarray, labels: Sequence[str]) -> np.ndarray:
        """(len(labels),): p(colour) * p(kind) for labels "colour kind"; 0 for labels it cannot name."""
        c = self.query_compat(text, text_embedding)
        out = np.zeros(len(labels), np.float32)
        for i, lab in enumerate(labels):
            parts = lab.split()
            if len(parts) == 2 and parts[0] in COLOURS and parts[1] in self.kinds:
                out[i] = c[COLOURS.index(parts[0])] * c[len(COLOURS) + self.kinds.index(parts[1])]
        return out

    def covers(self, labels: Sequence[str]) -> bool:
        """Whether every label is one the head can score (colour x a kind of its vocabulary)."""
        return bool(labels) and all(len(label.split()) == 2 and label.split()[0] in COLOURS
                                    and label.split()[1] in self.kinds for label in labels)


def load_default(path: Optional[os.PathLike | str] = None, **kwargs) -> Optional[QueryHead]:
    """The packaged head, or None if no weights are packaged (``kwargs``: :class:`QueryHead`'s word rules)."""
    p = Path(path) if path else DEFAULT_QUERY_HEAD
    return QueryHead(p, **kwargs) if p.is_file() else None
