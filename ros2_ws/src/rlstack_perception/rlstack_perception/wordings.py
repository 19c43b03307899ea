"""Query wordings: the held-out evaluation set (a data file) and the training generator.

* :func:`heldout_queries` expands ``wordings/heldout.json``: wordings written before any training
  of the query side (colour synonyms, shape paraphrases, fillers, word order, category words,
  absent objects). Nothing here trains on them or calibrates on them.
* :func:`training_wordings` draws training queries from *its own* word lists and templates
  (``TRAIN_*`` below); ``test/test_wordings.py`` checks that none of the held-out words, phrases,
  templates or query strings appear in them.

Targets are multi-label "compatibility" vectors: which of the map's colours (``COLOURS``) and
shapes (``SHAPES``) the query accepts. A plain query accepts one of each; "the red thing" accepts
every shape; "the purple cube" accepts no colour and "the red cup" no shape, so no object in the
map can match it (the "not here" answer).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Sequence, Tuple

import numpy as np

from rlstack_perception.embed import COLOURS, KINDS, SHAPES

#: the label-level reports' unseen wordings (train_embedder's retrieval report, evaluate's "unseen"
#: columns): shape synonyms never used as training targets; other kinds are asked with their kind word
UNSEEN_SHAPE_WORDS = {"cube": ("cube", "block"), "ball": ("ball", "sphere"), "cylinder": ("cylinder",)}

HELDOUT_FILE = Path(__file__).resolve().parent / "wordings" / "heldout.json"
#: a second held-out set in the first one's style, written with the richer training vocabulary and never
#: looked at before scoring (columns prefixed "fresh_")
HELDOUT_FRESH_FILE = HELDOUT_FILE.with_name("heldout_fresh.json")
#: the kinds beyond cube/ball/cylinder (columns prefixed "kinds_")
HELDOUT_KINDS_FILE = HELDOUT_FILE.with_name("heldout_kinds.json")
#: object words (and fillers, absent kinds) in no other list, written before any grounding of unseen nouns
#: (columns prefixed "unseen_")
HELDOUT_UNSEEN_FILE = HELDOUT_FILE.with_name("heldout_unseen.json")
#: everyday compounds of known words ("soup can", "coffee cup") and household absent kinds, the
#: development set of that style (columns prefixed "compounds_dev_")
HELDOUT_COMPOUNDS_DEV_FILE = HELDOUT_FILE.with_name("heldout_compounds_dev.json")
#: the same style, written before the development set's per-word results were looked at: the test set
#: (columns prefixed "compounds_test_")
HELDOUT_COMPOUNDS_TEST_FILE = HELDOUT_FILE.with_name("heldout_compounds_test.json")
#: other everyday nouns for a kind ("puck", "gift box") and household absent things of similar shapes, the
#: development set of that style (columns prefixed "nouns_dev_")
HELDOUT_NOUNS_DEV_FILE = HELDOUT_FILE.with_name("heldout_nouns_dev.json")
#: the same style, written before the change it measures: the test set (columns prefixed "nouns_test_")
HELDOUT_NOUNS_TEST_FILE = HELDOUT_FILE.with_name("heldout_nouns_test.json")
#: absent kinds of the first two held-out sets that are kinds of the vocabulary now (``KINDS``):
#: their queries name that kind (at map level they are still absent wherever no such object is)
NOW_PRESENT_KINDS = {"mug": "mug", "teddy bear": "teddy", "duck": "duck"}

# ----------------------------------------------------------------------------- training lists
#: colour words used for training (disjoint from the held-out synonyms)
TRAIN_COLOURS: Dict[str, Tuple[str, ...]] = {
    "red": ("red", "ruby", "cherry red", "bright red", "dark red", "tomato red", "vermilion", "cardinal red",
            "fire-engine red", "red-coloured"),
    "green": ("green", "lime", "lime green", "olive green", "forest green", "grass green", "bright green",
              "dark green", "mint green", "green-coloured"),
    "blue": ("blue", "azure", "cobalt", "royal blue", "dark blue", "light blue", "ocean blue", "cerulean",
             "ultramarine", "blue-coloured"),
    "yellow": ("yellow", "lemon", "canary yellow", "sunflower yellow", "bright yellow", "daffodil yellow",
               "butter yellow", "pale yellow", "lemon yellow", "yellow-coloured"),
}
#: shape words used for training (disjoint from the held-out paraphrases)
TRAIN_SHAPES: Dict[str, Tuple[str, ...]] = {
    "cube": ("cube", "block", "brick", "square block", "cubic block", "dice", "play block", "wooden block",
             "cube shape",
             # everyday and geometric words, none from any held-out set
             "cubelet", "die", "hexahedron", "building block", "six-sided block", "square brick",
             "rectangular block", "blocky thing", "carton", "parcel", "package", "cube-like object", "cubic thing"),
    "ball": ("ball", "sphere", "round ball", "bouncy ball", "ball-shaped thing", "sphere shape", "rubber ball",
             "little ball",
             "spheroid", "globule", "pellet", "beach ball", "football", "ball-like object", "pom-pom", "gumball",
             "golf ball", "bowling ball", "sphere-like thing"),
    "cylinder": ("cylinder", "canister", "pipe", "drum", "pillar", "tin", "roller", "cylinder shape",
                 "short cylinder",
                 "log", "shaft", "stump", "cylinder-like object", "stubby pillar", "pipe section",
                 "tall cylinder", "oil drum", "paint tin", "bollard", "tower", "pylon", "upright cylinder"),
    # the kinds of home_kinds (sim_bridges.scenes.kinds), none from any
    # held-out set (so no "toy": a category word of the first) ("flask" moved here from the cylinders)
    "plate": ("plate", "side plate", "flat plate", "paper plate", "round dish"),
    "book": ("book", "paperback", "volume", "textbook", "storybook"),
    "duck": ("duck", "bath duck", "duckling", "quacker", "duck figure"),
    "teddy": ("teddy", "plush", "plushie", "cuddly teddy", "teddy figure"),
    "mug": ("mug", "cup", "beaker", "tankard", "tea mug"),
    "lego": ("lego", "lego piece", "lego part", "lego bit"),
    "ring": ("ring", "torus", "loop", "annulus", "ring shape"),
    "bunny": ("bunny", "bunny figure", "hare", "bunny figurine"),
    "tray": ("tray", "tea tray", "baking tray", "flat tray"),
    "cone": ("cone", "conical object", "road cone", "cone-shaped thing"),
    "pyramid": ("pyramid", "square pyramid", "pyramidal object", "pyramid figure"),
    "wedge": ("wedge", "door wedge", "chock", "triangular wedge", "incline"),
    "star": ("star", "star cutout", "pointed star", "star figure"),
    "bowl": ("bowl", "soup bowl", "mixing bowl", "basin"),
    "bottle": ("bottle", "plastic bottle", "glass bottle", "flask", "milk bottle"),
    "egg": ("egg", "chicken egg", "boiled egg", "ovoid"),
    "bucket": ("bucket", "sand bucket", "tub", "bucket shape"),
    "vase": ("vase", "jar", "amphora", "ceramic vase"),
}
#: the same lists by their newer name: the keys are kinds (``KINDS``), not only shapes
TRAIN_KINDS = TRAIN_SHAPES
#: category words: accept every shape (with the colour, if any)
TRAIN_CATEGORY = ("object", "thing", "item", "shape", "piece", "one")
#: attribute words accepting some shapes
TRAIN_ATTRIBUTE = {"round": ("ball", "cylinder", "plate", "ring", "bowl", "bucket"), "square": ("cube",),
                   "rolling": ("ball",)}
#: colours and object kinds that are not in the map (negatives for the "not here" answer)
TRAIN_ABSENT_COLOURS = ("pink", "white", "black", "brown", "grey", "orange", "magenta",
                        "tan", "cream", "khaki", "gray", "transparent", "striped", "wooden-brown",
                        "plum", "mauve", "lilac", "orchid", "aubergine", "fuchsia", "grape", "eggplant", "peach",
                        "salmon", "olive", "burnt orange",
                        # the cyan hue region, which no other training colour covers (without it the colour
                        # rule gives "turquoise", a word of heldout_kinds.json, the class of a blue training word).
                        # "teal" and "dark teal" are left out: they take jade, jungle green and
                        # steel blue (green and blue synonyms of the older held-out sets) away from green and blue
                        "aqua")
TRAIN_ABSENT_KINDS = (
    "shoe", "phone", "chair", "lamp", "pen", "key", "hat", "giraffe", "dog", "car",
    "apple", "fork", "glass", "knife", "towel", "bag", "cat", "robot arm", "toothbrush", "wallet", "umbrella",
    "clock", "pencil", "helmet", "dinosaur", "airplane", "kettle", "sandwich", "watch",
    "cushion", "bottle opener", "tennis racket", "keyboard", "potted plant", "backpack", "hammer", "carrot",
    "horse", "cow", "lion", "tiger", "monkey", "bird", "fish", "frog", "turtle", "penguin", "zebra",
    "pig", "sheep", "mouse", "snake", "owl", "dolphin", "shark", "whale", "puppy", "kitten", "unicorn",
    "doll", "kite", "yo-yo", "puzzle", "train set", "model car", "action figure", "rocket", "boat", "truck",
    "bicycle", "scooter", "drone", "guitar", "flute", "trumpet", "violin", "piano",
    "table", "sofa", "bed", "desk", "shelf", "door", "window", "curtain", "rug", "blanket", "mirror",
    "vase", "candle", "picture frame", "light bulb", "plug", "cable", "charger", "headphones", "camera",
    "laptop", "tablet", "mouse pad", "printer", "television", "speaker", "microphone", "calculator",
    "stapler", "ruler", "eraser", "envelope", "stamp", "coin", "necklace", "bracelet",
    "glasses", "sunglasses", "glove", "scarf", "sock", "jacket", "shirt", "trousers", "belt", "boot",
    "sandal", "comb", "hairbrush", "soap", "sponge", "toilet paper", "shampoo", "razor", "towel rail",
    "pan", "pot", "saucepan", "ladle", "whisk", "spatula", "cutting board", "napkin", "lunchbox",
    "pear", "grape bunch", "strawberry", "lemon slice", "tomato", "potato", "onion", "cucumber",
    "bread", "cake", "cookie", "pizza", "cheese", "chocolate bar", "lollipop", "ice cream", "sausage",
    "leaf", "flower", "tree", "rock", "shell", "feather", "stick", "pine cone",
)
#: phrases the colour rule never reads as colour names: the kind words ("brick") and category words
NOT_COLOUR_PHRASES = tuple(w for ws in TRAIN_KINDS.values() for w in ws) + TRAIN_CATEGORY
#: names of things in the training lists: a colour name wholly inside one ("tea" in "tea tray") is the
#: thing's name, not a colour (query_text.anchor_colour)
THING_PHRASES = NOT_COLOUR_PHRASES + TRAIN_ABSENT_KINDS
#: templates ({c} colour phrase, {s} shape phrase); word order and fillers of our own
TRAIN_TEMPLATES = (
    "{c} {s}", "the {c} {s}", "a {c} {s}", "find the {c} {s}", "where is the {c} {s}?", "bring me the {c} {s}",
    "please bring me the {c} {s}", "get me the {c} {s}", "I need the {c} {s}", "go find the {c} {s}",
    "pick up the {c} {s}", "show me the {c} {s}", "fetch the {c} {s}", "grab the {c} {s}",
    "bring the {c} {s} to me", "I'm looking for the {c} {s}", "robot, find the {c} {s}",
    "help me find the {c} {s}", "look for the {c} {s}", "hand me the {c} {s}", "take the {c} {s} to the table",
    "the {s} in {c}", "the {s} coloured {c}", "{c}, the {s}", "a {s} of {c} colour", "the {c}-coloured {s}",
    "please, the {c} {s}", "I want that {c} {s}", "the {c} {s} on the table", "the {c} {s} on the floor",
    "is there a {c} {s}?", "go get the {c} {s} please", "the {s}: {c}", "where would I find a {c} {s}",
    "may I have the {c} {s}", "pass me the {c} {s}", "the little {c} {s} near you",
    # more fillers and word orders (none from any held-out set)
    "{c} {s} please", "do you see a {c} {s}", "where's my {c} {s}", "kindly bring the {c} {s}",
    "the {s} with the {c} colour", "be a dear and find the {c} {s}", "okay robot, the {c} {s}", "um, the {c} {s}",
    "go over and pick up the {c} {s}", "the {s} - {c}", "bring that {c} {s} here", "find me a {c} {s}",
    "there should be a {c} {s} somewhere", "I lost my {c} {s}", "quick, the {c} {s}", "the {c} {s}, please",
    "the {s}, it's {c}", "the {s} painted {c}", "the {s} whose colour is {c}", "need the {c} {s} right now",
    "hello, please find the {c} {s} for us", "the {c} {s} next to the wall", "the {s} in the colour {c}",
)


@dataclass(frozen=True)
class Query:
    text: str
    column: str                   # trained | colour_synonyms | paraphrases | combined | category | absent
    colours: Tuple[str, ...]      # accepted colours (empty for absent)
    shapes: Tuple[str, ...]       # accepted shapes (empty for absent)
    parts: Tuple[str, ...] = ()   # training only: the list words it was made of (for word-held-out folds)

    @property
    def labels(self) -> Tuple[str, ...]:
        return tuple(f"{c} {s}" for c in self.colours for s in self.shapes)


def load_heldout(path: Path = HELDOUT_FILE) -> dict:
    return json.loads(Path(path).read_text())


def heldout_queries(path: Path = HELDOUT_FILE, prefix: str = "") -> List[Query]:
    """The held-out queries (columns: colour_synonyms, paraphrases, combined, category, absent, and
    named_kinds for absent kinds that are kinds now: ``NOW_PRESENT_KINDS``), each column name with
    ``prefix``. The kinds asked about are the file's ``shape_paraphrases`` keys."""
    h = load_heldout(path)
    kinds = list(h["shape_paraphrases"])
    unknown = [k for k in kinds if k not in KINDS]
    if unknown:
        raise ValueError(f"{path}: kinds {unknown} are not in the vocabulary {KINDS}")
    out: List[Query] = []
    for c in COLOURS:
        for s in kinds:
            for cw in h["colour_synonyms"][c]:
                for t in h["colour_synonym_templates"]:
                    out.append(Query(t.format(c=cw, s=s), "colour_synonyms", (c,), (s,)))
            for sw in (s, *h["shape_paraphrases"][s]):
                for t in h["paraphrase_templates"]:
                    out.append(Query(t.format(c=c, s=sw), "paraphrases", (c,), (s,)))
            for cw in h["colour_synonyms"][c]:
                for sw in h["shape_paraphrases"][s]:
                    t = h["paraphrase_templates"][(len(out) * 7) % len(h["paraphrase_templates"])]
                    out.append(Query(t.format(c=cw, s=sw), "combined", (c,), (s,)))
    for c in COLOURS:
        for cat in h["category"]:
            if "{s}" in cat["template"]:
                for s in kinds:
                    out.append(Query(cat["template"].format(c=c, s=s), "category", (c,), (s,)))
            else:
                out.append(Query(cat["template"].format(c=c), "category", (c,), tuple(cat["shapes"])))
    a = h["absent"]

    def kind_query(text: str, colour: Optional[str], kind: str) -> Query:
        """A query naming an absent kind; one that is a kind now names it (column named_kinds)."""
        now = NOW_PRESENT_KINDS.get(kind)
        if now is None or colour not in (None, *COLOURS):
            return Query(text, "absent", (), ())
        return Query(text, "named_kinds", (colour,) if colour else COLOURS, (now,))

    for i, t in enumerate(a["templates"]):
        for j, ac in enumerate(a["colours"]):
            for k, s in enumerate(kinds):
                out.append(Query(t.format(c=ac, s=s), "absent", (), ()))
        for j, kind in enumerate(a["kinds"]):
            c = COLOURS[(i + j) % 4]
            out.append(kind_query(t.format(c=c, s=kind), c, kind))
            ac = a["colours"][(i + j) % len(a["colours"])]
            out.append(kind_query(t.format(c=ac, s=kind), ac, kind))
    for kind in a["kinds"]:
        out.append(kind_query(f"the {kind}", None, kind))
    if prefix:
        out = [Query(q.text, prefix + q.column, q.colours, q.shapes) for q in out]
    return list({q.text: q for q in out}.values())


def all_heldout_queries(kinds: bool = True) -> List[Query]:
    """The held-out sets: ``heldout.json`` (columns as named), ``heldout_fresh.json`` ("fresh_...") and,
    with ``kinds``, ``heldout_kinds.json`` ("kinds_..."), ``heldout_unseen.json`` ("unseen_..."),
    ``heldout_compounds_dev.json`` ("compounds_dev_..."), ``heldout_compounds_test.json`` ("compounds_test_..."),
    ``heldout_nouns_dev.json`` ("nouns_dev_...") and ``heldout_nouns_test.json`` ("nouns_test_...")."""
    out = heldout_queries() + heldout_queries(HELDOUT_FRESH_FILE, "fresh_")
    if not kinds:
        return out
    return (out + heldout_queries(HELDOUT_KINDS_FILE, "kinds_") + heldout_queries(HELDOUT_UNSEEN_FILE, "unseen_")
            + heldout_queries(HELDOUT_COMPOUNDS_DEV_FILE, "compounds_dev_")
            + heldout_queries(HELDOUT_COMPOUNDS_TEST_FILE, "compounds_test_")
            + heldout_queries(HELDOUT_NOUNS_DEV_FILE, "nouns_dev_")
            + heldout_queries(HELDOUT_NOUNS_TEST_FILE, "nouns_test_"))


def is_absent(column: str) -> bool:
    return column.split("_", 1)[-1].startswith("absent") or column.startswith("absent")


def trained_queries() -> List[Query]:
    """The wordings the map was built around (the old evaluation's 'trained' column)."""
    return [Query(t.format(c=c, s=s), "trained", (c,), (s,)) for c in COLOURS for s in SHAPES
            for t in ("{c} {s}", "the {c} {s}")]


def target_of(colours: Sequence[str], shapes: Sequence[str], kinds: Sequence[str] = KINDS) -> np.ndarray:
    """(len(COLOURS) + len(kinds),) 0/1 compatibility target."""
    return np.array([c in colours for c in COLOURS] + [s in shapes for s in kinds], dtype=np.float32)


def training_wordings(n: int, seed: int = 0) -> List[Query]:
    """``n`` distinct training queries drawn from the training lists (never the held-out ones).

    Mix: ~50 % colour + kind, ~10 % colour + category/attribute, ~5 % kind alone, ~35 % absent
    (absent colour, absent kind, both, or an absent kind alone). Half of the kinds drawn are the
    three basic ones (the ones the lift grasps), half the others.
    """
    rng = np.random.default_rng(seed)
    seen: Dict[str, Query] = {}
    tries = 0
    while len(seen) < n and tries < 50 * n:
        tries += 1
        t = TRAIN_TEMPLATES[rng.integers(len(TRAIN_TEMPLATES))]
        u = rng.random()
        c = COLOURS[rng.integers(4)]
        s = SHAPES[rng.integers(3)] if rng.random() < 0.5 else KINDS[3 + rng.integers(len(KINDS) - 3)]
        cw = TRAIN_COLOURS[c][rng.integers(len(TRAIN_COLOURS[c]))]
        sw = TRAIN_SHAPES[s][rng.integers(len(TRAIN_SHAPES[s]))]
        no_colour = (t.replace("{c} ", "").replace("{c}-coloured ", "").replace(" in {c}", "")
                     .replace(" coloured {c}", "").replace(" of {c} colour", "").replace("{c}, ", "")
                     .replace(": {c}", "").replace(" - {c}", "").replace(", it's {c}", "").replace(" painted {c}", "")
                     .replace(" with the {c} colour", "").replace(" in the colour {c}", ""))
        if "{c}" in no_colour and (0.60 <= u < 0.65 or u >= 0.94):
            continue  # this template has no colour-less form
        kind = TRAIN_ABSENT_KINDS[rng.integers(len(TRAIN_ABSENT_KINDS))]
        ac = TRAIN_ABSENT_COLOURS[rng.integers(len(TRAIN_ABSENT_COLOURS))]
        if u < 0.50:
            q = Query(t.format(c=cw, s=sw), "train", (c,), (s,), (cw, sw))
        elif u < 0.57:
            q = Query(t.format(c=cw, s=TRAIN_CATEGORY[rng.integers(len(TRAIN_CATEGORY))]), "train", (c,), KINDS,
                      (cw,))
        elif u < 0.60:
            attr = list(TRAIN_ATTRIBUTE)[rng.integers(len(TRAIN_ATTRIBUTE))]
            noun = TRAIN_CATEGORY[rng.integers(3)]
            q = Query(t.format(c=cw, s=f"{attr} {noun}"), "train", (c,), TRAIN_ATTRIBUTE[attr], (cw,))
        elif u < 0.65:
            q = Query(no_colour.format(s=sw), "train", COLOURS, (s,), (sw,))
        elif u < 0.73:
            q = Query(t.format(c=ac, s=sw), "train_absent", (), (s,), (ac, sw))
        elif u < 0.88:
            q = Query(t.format(c=cw, s=kind), "train_absent", (c,), (), (cw, kind))
        elif u < 0.94:
            q = Query(t.format(c=ac, s=kind), "train_absent", (), (), (ac, kind))
        else:
            q = Query(no_colour.format(s=kind), "train_absent", COLOURS, (), (kind,))
        if "{" in q.text:
            continue
        seen.setdefault(q.text, q)
    return list(seen.values())


def word_folds(k: int = 3, seed: int = 0) -> List[set]:
    """``k`` disjoint sets of training list words (all but each colour's and shape's first, plain word),
    for calibrating on words a fold's model never saw."""
    rng = np.random.default_rng(seed)
    words = [w for ws in TRAIN_COLOURS.values() for w in ws[1:]] + [w for ws in TRAIN_SHAPES.values() for w in ws[1:]]
    words += list(TRAIN_ABSENT_COLOURS) + list(TRAIN_ABSENT_KINDS)
    words = [words[i] for i in rng.permutation(len(words))]
    return [set(words[i::k]) for i in range(k)]


def columns(queries: Sequence[Query]) -> Dict[str, List[Query]]:
    out: Dict[str, List[Query]] = {}
    for q in queries:
        out.setdefault(q.column, []).append(q)
    return out


def iter_words(queries: Sequence[Query]) -> Iterator[str]:
    for q in queries:
        yield from q.text.lower().replace(",", " ").replace("?", " ").split()


def main(argv: Optional[Sequence[str]] = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(description="Print the held-out query set, per column")
    ap.parse_args(argv)
    for col, qs in columns(all_heldout_queries()).items():
        print(f"{col}: {len(qs)} queries, e.g. {[q.text for q in qs[:4]]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
