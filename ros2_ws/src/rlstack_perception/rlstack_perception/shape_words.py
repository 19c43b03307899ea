"""Shape words grounded in WordNet: other names for the map's shapes (cube, ball, cylinder, cone, ...).

MiniLM places several everyday shape words far from ours ("column" is nearest "table", "can" is
read as the verb), so the query head, trained on our own words, reads them as unknown kinds:
"not here". As the xkcd survey does for colours (:mod:`rlstack_perception.colour_words`), a
lexicon grounds them: WordNet 3.0 (Princeton; the Debian package ``wordnet-base``) lists which
words name the same *shape*.

The packaged table (``wordings/wordnet_shapes.json``) was built by :func:`build_table` from the
*training* shape words only (``wordings.TRAIN_SHAPES``, every kind's; never the held-out lists): for
each training word, the WordNet noun synsets of lexical file ``noun.shape`` that contain it give their
other lemmas; adjectives whose derivation or pertainym pointer leads to such a synset give theirs
("cylindrical"), and so do adjectives whose pointer leads to a thing (noun.artifact or noun.shape)
that one of the table's words names ("tubular": constituting a tube). Training words themselves are
left out (the head knows them), and so is any word the training lists name as an absent kind, that
two shapes share, or that negates one ("non..."). Only shape synsets are used for nouns: artifact
senses bring in tugboats (tower), spears (shaft) and pulleys (block).

    python -m rlstack_perception.shape_words --build /usr/share/wordnet   # rewrite the table
    python -m rlstack_perception.shape_words "the red column"              # what a query names

This is a lookup, not generalisation: a held-out word that WordNet lists as a synonym of a
training word is found, one it does not (e.g. "box") is left to the head.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from functools import lru_cache
from pathlib import Path
from typing import Dict, Iterable, Optional, Sequence

import numpy as np

from rlstack_perception.embed import SHAPES

TABLE_FILE = Path(__file__).resolve().parent / "wordings" / "wordnet_shapes.json"
_SHAPE_LEXFILE = 25  # noun.shape
_ARTIFACT_LEXFILE = 6  # noun.artifact
WORDNET_NOTICE = (
    "WordNet 3.0 Copyright 2006 by Princeton University. All rights reserved. THIS SOFTWARE AND DATABASE IS "
    "PROVIDED \"AS IS\" AND PRINCETON UNIVERSITY MAKES NO REPRESENTATIONS OR WARRANTIES, EXPRESS OR IMPLIED. "
    "The name of Princeton University or Princeton may not be used in advertising or publicity pertaining to "
    "distribution of the software and/or database. (WordNet 3.0 license; words derived from the database.)")


def _norm(text: str) -> str:
    return " ".join(re.findall(r"[a-z]+", text.lower().replace("_", " ").replace("-", " ")))


def _index_rows(path: Path):
    """The fields of each entry of a WordNet ``index.<pos>`` file (its licence header skipped)."""
    for line in path.read_text().splitlines():
        if line.startswith(" ") or not line.strip():
            continue
        yield line.split()


def _read_index(path: Path) -> Dict[str, list]:
    """lemma -> its synset offsets, from a WordNet ``index.<pos>`` file."""
    return {p[0]: p[4 + int(p[3]) + 2:] for p in _index_rows(path)}


def _synset(fh, offset: str):
    fh.seek(int(offset))
    p = fh.readline().decode().split("|", 1)[0].split()
    lex, wc = int(p[1]), int(p[3], 16)
    words = [p[4 + 2 * i].lower() for i in range(wc)]
    k = 4 + 2 * wc
    n = int(p[k])
    ptrs = [(p[k + 1 + 4 * i], p[k + 2 + 4 * i], p[k + 3 + 4 * i]) for i in range(n)]
    return lex, [re.sub(r"\(.*\)$", "", w) for w in words], ptrs


def build_table(wordnet_dir: Path, train_shapes: Dict[str, Sequence[str]], absent: Iterable[str],
                thing_adjectives: bool = True) -> Dict[str, str]:
    """{word: shape} from WordNet's shape synsets of the training shape words (see the module doc).
    ``thing_adjectives``: also adjectives derived from a thing that one of the table's words names
    ("tubular": a tube)."""
    d = Path(wordnet_dir)
    nidx = _read_index(d / "index.noun")
    train = {_norm(w) for ws in train_shapes.values() for w in ws}
    absent = {_norm(w) for w in absent}
    found: Dict[str, set] = {}
    shape_offsets: Dict[str, str] = {}
    with open(d / "data.noun", "rb") as fh:
        for shape, ws in train_shapes.items():
            for w in ws:
                for off in nidx.get(w.lower().replace(" ", "_").replace("-", "_"), []):
                    lex, lemmas, _ = _synset(fh, off)
                    if lex != _SHAPE_LEXFILE:
                        continue
                    shape_offsets[off] = shape
                    for lem in lemmas:
                        found.setdefault(_norm(lem), set()).add(shape)
    # adjectives pointing at those shape synsets ("cylindrical" -> cylinder)
    adjectives = []   # (lemmas, noun offsets its derivation / pertainym pointers lead to)
    with open(d / "data.adj", "rb") as fh:
        for line in fh:
            if line.startswith(b" "):
                continue
            p = line.decode().split("|", 1)[0].split()
            wc = int(p[3], 16)
            words = [re.sub(r"\(.*\)$", "", p[4 + 2 * i].lower()) for i in range(wc)]
            k = 4 + 2 * wc
            nouns = [p[k + 2 + 4 * i] for i in range(int(p[k]))
                     if p[k + 1 + 4 * i] in ("+", "\\") and p[k + 3 + 4 * i] == "n"]
            adjectives.append((words, nouns))
            for off in nouns:
                if off in shape_offsets:
                    for w in words:
                        found.setdefault(_norm(w), set()).add(shape_offsets[off])
    table = {w: next(iter(s)) for w, s in sorted(found.items())
             if len(s) == 1 and w and w not in train and w not in absent and not w.startswith("non")}
    if thing_adjectives:
        # adjectives pointing at a thing (noun.artifact, noun.shape) one of whose names the table holds:
        # "tubular" (constituting a tube) is a cylinder as "tube" is; other senses of the name are not
        # followed ("editorial" points at a newspaper column, "terrestrial" at the globe that is the Earth)
        more: Dict[str, set] = {}
        with open(d / "data.noun", "rb") as fh:
            for words, nouns in adjectives:
                for off in nouns:
                    lex, lemmas, _ = _synset(fh, off)
                    if lex not in (_ARTIFACT_LEXFILE, _SHAPE_LEXFILE):
                        continue
                    for lem in lemmas:
                        if _norm(lem) in table:
                            for w in words:
                                more.setdefault(_norm(w), set()).add(table[_norm(lem)])
        table.update({w: next(iter(s)) for w, s in sorted(more.items())
                      if len(s) == 1 and w and w not in table and w not in train and w not in absent
                      and not w.startswith("non")})
    return dict(sorted(table.items()))


@lru_cache(maxsize=2)
def load_table(path: Path = TABLE_FILE) -> Dict[str, str]:
    return dict(json.loads(Path(path).read_text())["words"])


def find_shape_word(text: str, table: Optional[Dict[str, str]] = None, max_words: int = 3):
    """(word, shape) of the first (longest) table word in ``text``, or None."""
    table = load_table() if table is None else table
    words = _norm(text).split()
    for i in range(len(words)):
        for n in range(min(max_words, len(words) - i), 0, -1):
            cand = " ".join(words[i:i + n])
            if cand in table:
                return cand, table[cand]
    return None


class ShapeRule:
    """Shape compatibility from the WordNet table: the named shape is accepted (1), the head's other
    outputs are kept (so category words still work)."""

    def __init__(self, table: Optional[Dict[str, str]] = None, kinds: Sequence[str] = SHAPES) -> None:
        self.table = load_table() if table is None else table
        self.kinds = tuple(kinds)   # the order of the compatibility vector it is applied to

    def apply(self, text: str, shape_compat: np.ndarray) -> np.ndarray:
        found = find_shape_word(text, self.table)
        if found is None or found[1] not in self.kinds:
            return shape_compat
        out = np.array(shape_compat, np.float32, copy=True)
        out[self.kinds.index(found[1])] = 1.0
        return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="WordNet shape words: build the packaged table, or look up a query")
    ap.add_argument("query", nargs="*")
    ap.add_argument("--build", metavar="WORDNET_DIR", help="WordNet 3.0 dict folder (index.noun, data.noun, data.adj)")
    args = ap.parse_args(argv)
    if args.build:
        from rlstack_perception import wordings as W

        table = build_table(Path(args.build), W.TRAIN_SHAPES, W.TRAIN_ABSENT_KINDS)
        TABLE_FILE.write_text(json.dumps({
            "about": "Other names of the map's shapes, from WordNet 3.0 noun.shape synsets (and adjectives derived "
                     "from them, or from a thing one of their words names) of the training shape words "
                     "(rlstack_perception.wordings.TRAIN_SHAPES); built by "
                     "python -m rlstack_perception.shape_words --build <wordnet dict dir>.",
            "source": "WordNet 3.0 (Debian package wordnet-base 1:3.0-37)", "license": WORDNET_NOTICE,
            "words": table}, indent=1) + "\n")
        print(f"{len(table)} words -> {TABLE_FILE}")
        return 0
    for q in args.query:
        print(q, "->", find_shape_word(q))
    return 0


if __name__ == "__main__":
    sys.exit(main())
