"""The held-out wording set stays out of training: no held-out word, phrase, template or
query string appears in what the training generator produces or in its lists."""

import re

import pytest

from rlstack_perception import wordings as w
from rlstack_perception.embed import COLOURS, KINDS


def _tokens(text):
    return set(re.findall(r"[a-z][a-z'-]*", text.lower()))


def _train_texts():
    return [q.text for q in w.training_wordings(6000, seed=0)] + [q.text for q in w.training_wordings(6000, seed=1)]


def test_heldout_columns_and_sizes():
    cols = w.columns(w.heldout_queries())
    # named_kinds: the first set's absent kinds that are kinds now (mug, teddy bear, duck)
    assert set(cols) == {"colour_synonyms", "paraphrases", "combined", "category", "absent", "named_kinds"}
    assert {q.shapes for q in cols["named_kinds"]} == {("mug",), ("teddy",), ("duck",)}
    assert len(cols["colour_synonyms"]) >= 150 and len(cols["paraphrases"]) >= 200 and len(cols["absent"]) >= 100
    for q in cols["absent"]:
        assert q.labels == ()
    for col in ("colour_synonyms", "paraphrases", "combined", "category"):
        for q in cols[col]:
            assert q.labels and "{" not in q.text


KINDS_PHRASES = ("please locate", "where's that", "gone", "bring over", "when you can", "i think i left",
                 "could the robot")
UNSEEN_PHRASES = ("toss me", "i'm after", "any idea", "lemme", "that's", "go on,", "whatsit", "doodad")
COMPOUNDS_DEV_PHRASES = ("can i get", "i'd love", "could i have", "where is it", "bring back", "and bring it here",
                 "the one that is", "thingamajig", "knick-knack")
COMPOUNDS_TEST_PHRASES = ("i need you to", "where has the", "got to", "have you seen", "please, robot", "go grab",
                 "that's coloured", "doohickey", "widget")
NOUNS_DEV_PHRASES = ("nip over", "hiding", "hunting for", "do me a favour", "that looks", "let's have",
                   "whatchamacallit", "trinket")
NOUNS_TEST_PHRASES = ("no bother", "lying about", "could do with", "pop over", "shade", "fancy getting",
                  "thingummy", "gadget")
FRESH_PHRASES = ("can you", "i'd like", "which is", "if you would", "anywhere around", "end up", "fetch me that",
                 "from there", "thingy", "gizmo")


@pytest.mark.parametrize("path", [w.HELDOUT_FILE, w.HELDOUT_FRESH_FILE, w.HELDOUT_KINDS_FILE, w.HELDOUT_UNSEEN_FILE,
                                  w.HELDOUT_COMPOUNDS_DEV_FILE, w.HELDOUT_COMPOUNDS_TEST_FILE, w.HELDOUT_NOUNS_DEV_FILE,
                                  w.HELDOUT_NOUNS_TEST_FILE],
                         ids=["heldout", "fresh", "kinds", "unseen", "compounds_dev", "compounds_test", "nouns_dev",
                              "nouns_test"])
def test_heldout_words_never_in_training(path):
    h = w.load_heldout(path)
    texts = _train_texts()
    train_tokens = set().union(*(_tokens(t) for t in texts))
    joined = "\n".join(t.lower() for t in texts)
    held_words = [x for v in h["colour_synonyms"].values() for x in v]
    held_words += [x for v in h["shape_paraphrases"].values() for x in v]
    # the first set's absent kinds "mug" and "duck" are kinds of the vocabulary now: their own names train
    held_words += h["absent"]["colours"] + [k for k in h["absent"]["kinds"] if k not in KINDS]
    held_words += {w.HELDOUT_FILE: ["toy", "plaything"], w.HELDOUT_FRESH_FILE: ["thingy", "gizmo", "yo"],
                   w.HELDOUT_KINDS_FILE: ["soft toy", "dishware", "container"],
                   w.HELDOUT_UNSEEN_FILE: ["whatsit", "doodad"],
                   w.HELDOUT_COMPOUNDS_DEV_FILE: ["thingamajig", "knick-knack"],
                   w.HELDOUT_COMPOUNDS_TEST_FILE: ["doohickey", "widget"],
                   w.HELDOUT_NOUNS_DEV_FILE: ["whatchamacallit", "trinket"],
                   w.HELDOUT_NOUNS_TEST_FILE: ["thingummy", "gadget"]}[path]
    for word in held_words:
        if " " in word:
            assert word.lower() not in joined, word
        else:
            assert word.lower() not in train_tokens, word
    lists = _train_items()
    for word in held_words:
        assert word not in lists, word


def test_heldout_fillers_templates_and_queries_never_in_training():
    h = w.load_heldout()
    texts = _train_texts()
    joined = "\n".join(t.lower() for t in texts)
    for phrase in ("could you", "for me", "over there", "would you mind", "hey robot", "any chance", "thanks",
                   "that is", "go and get", "the {s}, the {c} one"):
        assert phrase.replace("{s}", "").replace("{c}", "") not in w.TRAIN_TEMPLATES
        if "{" not in phrase:
            assert phrase not in joined, phrase
    held_t = _templates(h)
    held_t -= {"the {c} {s}", "a {c} {s}"}  # the bare forms are not a wording trick
    assert not held_t & set(w.TRAIN_TEMPLATES)
    for phrase in (FRESH_PHRASES + KINDS_PHRASES + UNSEEN_PHRASES + COMPOUNDS_DEV_PHRASES + COMPOUNDS_TEST_PHRASES
                   + NOUNS_DEV_PHRASES + NOUNS_TEST_PHRASES):
        assert phrase not in joined, phrase
    for path in (w.HELDOUT_FRESH_FILE, w.HELDOUT_KINDS_FILE, w.HELDOUT_UNSEEN_FILE, w.HELDOUT_COMPOUNDS_DEV_FILE,
                 w.HELDOUT_COMPOUNDS_TEST_FILE, w.HELDOUT_NOUNS_DEV_FILE, w.HELDOUT_NOUNS_TEST_FILE):
        other = w.load_heldout(path)
        other_t = _templates(other)
        assert not (other_t - {"the {c} {s}", "a {c} {s}"}) & set(w.TRAIN_TEMPLATES)
    train_set = set(texts)
    qs = w.all_heldout_queries()
    assert {q.column for q in qs} >= {"fresh_paraphrases", "fresh_absent", "fresh_colour_synonyms",
                                      "kinds_paraphrases", "kinds_absent", "kinds_category",
                                      "unseen_paraphrases", "unseen_absent", "unseen_colour_synonyms",
                                      "unseen_category",
                                      "compounds_dev_paraphrases", "compounds_dev_absent",
                                      "compounds_dev_colour_synonyms", "compounds_dev_category",
                                      "compounds_test_paraphrases", "compounds_test_absent",
                                      "compounds_test_colour_synonyms", "compounds_test_category",
                                      "nouns_dev_paraphrases", "nouns_dev_absent", "nouns_dev_colour_synonyms",
                                      "nouns_dev_category", "nouns_test_paraphrases", "nouns_test_absent",
                                      "nouns_test_colour_synonyms", "nouns_test_category"}
    for q in qs:
        if q.column != "trained":
            assert q.text not in train_set, q.text


def test_training_targets():
    qs = w.training_wordings(2000, seed=3)
    assert len(qs) == 2000 and len({q.text for q in qs}) == 2000
    kinds = {q.column for q in qs}
    assert kinds == {"train", "train_absent"}
    for q in qs:
        t = w.target_of(q.colours, q.shapes)
        assert t.shape == (len(COLOURS) + len(KINDS),)
        if q.column == "train":
            assert t[:4].any() and t[4:].any()
        else:
            assert not (t[:4].any() and t[4:].any())


def test_training_draws_every_kind_and_kinds_heldout_expands():
    qs = w.training_wordings(4000, seed=5)
    drawn = {s for q in qs if q.column == "train" and len(q.shapes) == 1 for s in q.shapes}
    assert drawn == set(KINDS)
    for kind, words in w.TRAIN_KINDS.items():
        assert kind in KINDS and words[0] == kind
    cols = w.columns(w.heldout_queries(w.HELDOUT_KINDS_FILE, "kinds_"))
    assert {"kinds_paraphrases", "kinds_colour_synonyms", "kinds_combined", "kinds_category",
            "kinds_absent"} <= set(cols)
    assert {s for q in cols["kinds_paraphrases"] for s in q.shapes} == set(KINDS[3:])


def _templates(h):
    """Every template of a held-out set."""
    return set(h["colour_synonym_templates"]) | set(h["paraphrase_templates"]) | set(h["absent"]["templates"])


def _train_items():
    """The items of the training lists (colour words, kind words, absent colours and kinds, category words)."""
    items = [x for v in w.TRAIN_COLOURS.values() for x in v] + [x for v in w.TRAIN_KINDS.values() for x in v]
    return items + list(w.TRAIN_ABSENT_COLOURS) + list(w.TRAIN_ABSENT_KINDS) + list(w.TRAIN_CATEGORY)


def _items(h):
    out = ([x for v in h["colour_synonyms"].values() for x in v]
           + [x for v in h["shape_paraphrases"].values() for x in v])
    return out + h["absent"]["colours"] + h["absent"]["kinds"]


def test_unseen_set_words_are_new_to_training_and_every_other_set():
    """heldout_unseen.json: its object words, absent kinds and colours are items of no
    training list and of no other held-out set, and each brings a word (token) found in none of them
    (a compound of known words, "bucket hat", is allowed: its point is which word heads it); its fillers
    are in no other set's templates."""
    h = w.load_heldout(w.HELDOUT_UNSEEN_FILE)
    others = [w.load_heldout(p) for p in (w.HELDOUT_FILE, w.HELDOUT_FRESH_FILE, w.HELDOUT_KINDS_FILE)]
    train_items = _train_items() + list(w.TRAIN_ATTRIBUTE)
    other_items = [x for o in others for x in _items(o)]
    known = set().union(*(_tokens(x) for x in train_items + other_items))
    known |= set().union(*(_tokens(t.replace("{c}", "").replace("{s}", "")) for t in w.TRAIN_TEMPLATES))
    compounds_of_known_words = {"bucket hat"}
    for word in _items(h):
        assert word not in train_items and word not in other_items, word
        assert word in compounds_of_known_words or _tokens(word) - known, word
    for o in others:
        other_t = _templates(o)
        mine = _templates(h)
        assert not (mine - {"the {c} {s}"}) & other_t
    assert set(h["shape_paraphrases"]) >= {"cube", "ball", "cylinder"} and set(h["shape_paraphrases"]) <= set(KINDS)
    cols = w.columns(w.heldout_queries(w.HELDOUT_UNSEEN_FILE, "unseen_"))
    assert {"unseen_paraphrases", "unseen_colour_synonyms", "unseen_combined", "unseen_category",
            "unseen_absent"} <= set(cols)
    assert all(q.labels == () for q in cols["unseen_absent"])


@pytest.mark.parametrize("path", [w.HELDOUT_COMPOUNDS_DEV_FILE, w.HELDOUT_COMPOUNDS_TEST_FILE, w.HELDOUT_NOUNS_DEV_FILE,
                                  w.HELDOUT_NOUNS_TEST_FILE],
                         ids=["compounds_dev", "compounds_test", "nouns_dev", "nouns_test"])
def test_everyday_sets_items_are_in_no_training_list_and_no_other_set(path):
    """heldout_compounds_dev.json, heldout_compounds_test.json, heldout_nouns_dev.json and heldout_nouns_test.json:
    everyday wordings, so compounds of known words are allowed ("soup can", "tin can"), but no
    item is an item of a training list or of another held-out set, a one-word item is no word of another set's
    items, and its templates are in no other set."""
    h = w.load_heldout(path)
    prefix = {w.HELDOUT_COMPOUNDS_DEV_FILE: "compounds_dev_", w.HELDOUT_COMPOUNDS_TEST_FILE: "compounds_test_",
              w.HELDOUT_NOUNS_DEV_FILE: "nouns_dev_", w.HELDOUT_NOUNS_TEST_FILE: "nouns_test_"}[path]
    others = [w.load_heldout(p) for p in (w.HELDOUT_FILE, w.HELDOUT_FRESH_FILE, w.HELDOUT_KINDS_FILE,
                                          w.HELDOUT_UNSEEN_FILE, w.HELDOUT_COMPOUNDS_DEV_FILE,
                                          w.HELDOUT_COMPOUNDS_TEST_FILE, w.HELDOUT_NOUNS_DEV_FILE,
                                          w.HELDOUT_NOUNS_TEST_FILE)
              if p != path]
    train_items = _train_items()
    other_items = [x for o in others for x in _items(o)]
    other_tokens = set().union(*(_tokens(x) for x in other_items))
    for word in _items(h):
        assert word not in train_items and word not in other_items, word
        assert " " in word or word not in other_tokens, word
    mine = _templates(h)
    for o in others:
        other_t = _templates(o)
        assert not (mine - {"the {c} {s}"}) & other_t
    cols = w.columns(w.heldout_queries(path, prefix))
    assert {prefix + c for c in ("paraphrases", "colour_synonyms", "combined", "category", "absent")} <= set(cols)
    assert all(q.labels == () for q in cols[prefix + "absent"])
