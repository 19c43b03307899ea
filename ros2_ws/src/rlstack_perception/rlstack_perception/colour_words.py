"""Colour words grounded in RGB: the xkcd colour survey's 949 names, and a nearest-neighbour rule.

MiniLM does not know what colour most colour words are (measured: the single word "golden" is
nearest to "purple", "emerald" to "orange", "scarlet" to "pink" among the basic colour words),
so a query head on MiniLM embeddings cannot learn "emerald = green" from other words. The xkcd
colour survey (CC0; ``wordings/xkcd_colours.json``) gives each of 949 colour names people use an
sRGB value. :func:`find_colour` finds the first (longest) colour name in a query;
:class:`ColourRule` maps its RGB to one of the map's colours (``COLOURS``) or to none (an absent
colour), by the nearest *training* colour word in the HSV cone (``wordings.TRAIN_COLOURS`` and
``wordings.TRAIN_ABSENT_COLOURS`` found in the survey; never the held-out words).
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Tuple

import numpy as np

from rlstack_perception.embed import COLOURS

LEXICON_FILE = Path(__file__).resolve().parent / "wordings" / "xkcd_colours.json"


def _norm(name: str) -> str:
    return " ".join(re.findall(r"[a-z]+", name.lower().replace("'", "")))


@lru_cache(maxsize=2)
def lexicon(path: Path = LEXICON_FILE) -> Dict[str, Tuple[float, float, float]]:
    raw = json.loads(Path(path).read_text())["colours"]
    out = {}
    for name, hexv in raw.items():
        h = hexv.lstrip("#")
        out[_norm(name)] = tuple(int(h[i:i + 2], 16) / 255.0 for i in (0, 2, 4))
    return out


#: Berlin and Kay's basic colour terms: the heads of compound colour names ("poppy red", "jungle green")
BASIC_TERMS = frozenset("black white red green yellow blue brown purple pink orange grey gray".split())


def find_colour(text: str, exclude: Iterable[str] = (), max_words: int = 4,
                lex: Optional[Dict[str, Tuple[float, float, float]]] = None) -> Optional[Tuple[str, Tuple[float, ...]]]:
    """(name, rgb) of the first colour name in ``text`` (longest at each position; of adjacent names, the
    last), or None.

    ``exclude``: phrases that are never read as colours (our shape words such as "brick").
    """
    lex = lex or lexicon()
    words = _norm(text).split()
    skip = {_norm(e) for e in exclude}

    def longest_at(i: int) -> int:
        for n in range(min(max_words, len(words) - i), 0, -1):
            cand = " ".join(words[i:i + n])
            if cand in lex and cand not in skip:
                return n
        return 0

    for i in range(len(words)):
        n = longest_at(i)
        if n:
            # a colour name right before a basic colour term names a shade of it, the head of the compound
            # ("candy-apple red" is a red, though "apple" alone is a green); a name before another kind of
            # colour name may be a colour before a noun ("the green wine bottle", "the blue sand bucket")
            while i + n < len(words) and words[i + n] in BASIC_TERMS and longest_at(i + n) == 1:
                i, n = i + n, 1
            cand = " ".join(words[i:i + n])
            return cand, lex[cand]
    return None


def hsv_cone(rgb) -> np.ndarray:
    """(..., 3) point in the HSV cone: (S V cos H, S V sin H, V / 2).

    CIELAB was tried first: its hue is not uniform from blue to purple (purple sits 12 deg from
    "royal blue"), and the nearest anchor of "purple" was a blue word. Both spaces give the same
    leave-one-out accuracy on the training anchors (0.91).
    """
    rgb = np.asarray(rgb, float)
    mx, mn = rgb.max(-1), rgb.min(-1)
    d = np.where(mx > mn, mx - mn, 1.0)
    r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
    h = np.where(mx == r, (g - b) / d % 6, np.where(mx == g, (b - r) / d + 2, (r - g) / d + 4)) / 6.0
    h = np.where(mx > mn, h, 0.0)
    s = np.where(mx > 0, (mx - mn) / np.where(mx > 0, mx, 1.0), 0.0)
    return np.stack([s * mx * np.cos(2 * np.pi * h), s * mx * np.sin(2 * np.pi * h), 0.5 * mx], -1)


class ColourRule:
    """RGB -> one of ``COLOURS`` or None, by the nearest anchor colour word in the HSV cone."""

    def __init__(self, anchors: Dict[str, Iterable[str]], absent: Iterable[str],
                 lex: Optional[Dict[str, Tuple[float, float, float]]] = None) -> None:
        lex = lex or lexicon()
        names: List[str] = []
        cls: List[int] = []
        for c, ws in anchors.items():
            for w in ws:
                if _norm(w) in lex:
                    names.append(_norm(w))
                    cls.append(COLOURS.index(c))
        for w in absent:
            if _norm(w) in lex:
                names.append(_norm(w))
                cls.append(-1)
        if not names:
            raise ValueError("no anchor colour word is in the colour lexicon")
        self.names = names
        self.cls = np.array(cls)
        self.feat = hsv_cone(np.array([lex[n] for n in names]))

    @classmethod
    def default(cls) -> "ColourRule":
        from rlstack_perception import wordings as W

        return cls(W.TRAIN_COLOURS, W.TRAIN_ABSENT_COLOURS)

    def classify(self, rgb) -> Tuple[Optional[str], str]:
        """(colour or None for 'not one of ours', the nearest anchor word)."""
        d = np.linalg.norm(self.feat - hsv_cone(np.asarray(rgb, float)), axis=1)
        k = int(np.argmin(d))
        return (COLOURS[self.cls[k]] if self.cls[k] >= 0 else None), self.names[k]

    def compat(self, text: str, exclude: Iterable[str] = ()) -> Optional[np.ndarray]:
        """(len(COLOURS),) 0/1 colour compatibility from the first colour name in ``text``; None if none."""
        found = find_colour(text, exclude)
        if found is None:
            return None
        c, _ = self.classify(found[1])
        out = np.zeros(len(COLOURS), np.float32)
        if c is not None:
            out[COLOURS.index(c)] = 1.0
        return out
