"""The WordNet noun lookup (rlstack_perception.noun_words): the packaged table, the head-noun reading of a
query and the rule applied after the query head. Pure Python, no WordNet needed (the table is packaged)."""

import json

import numpy as np
import pytest

from rlstack_perception import noun_words as N
from rlstack_perception import wordings as W
from rlstack_perception.embed import KINDS


@pytest.fixture(scope="module")
def lex():
    return N.NounLexicon()


def test_table_built_from_training_words_only_with_licence():
    doc = json.loads(N.TABLE_FILE.read_text())
    assert "Princeton University" in doc["license"] and doc["max_up"] >= 1
    words = doc["words"]
    assert set(words.values()) <= set(KINDS) | {N.ABSENT}
    train = {N._norm(w) for ws in W.TRAIN_KINDS.values() for w in ws} | {N._norm(w) for w in W.TRAIN_ABSENT_KINDS}
    assert not train & set(words), "training words are left to the head"
    assert not train & set(doc["nouns"])
    # no held-out object word was a seed: nothing from any held-out set is a training word (test_wordings),
    # and the table is keyed by WordNet lemmas found from those seeds
    assert words["mallard"] == "duck" and words["can"] == "cylinder" and words["goblet"] == N.ABSENT


def test_head_noun_decides_compounds(lex):
    # the last noun is what is asked for; a kind word before it only modifies it
    assert lex.decide("the red tennis ball can") == ("kind", "cylinder", ("ball",))
    assert lex.decide("the blue cup holder") == ("not_modifiers", "", ("mug",))
    assert lex.decide("a yellow bucket hat") == ("absent", "", ())
    # a kind's own training words are the head's business, even in compounds of two kinds ("lego brick")
    assert lex.decide("the red cube") is None
    assert lex.decide("the red lego brick") is None
    assert lex.decide("the green bath duck") is None
    # WordNet's own compounds are one noun
    assert lex.decide("the red teddy bear") == ("kind", "teddy", ())
    # a shape adjective before a noun the table does not ground says what shape the thing is; a noun
    # modifier names another thing ("cup holder" above)
    assert "spherical" in lex.adjectives and "globe" not in lex.adjectives and "tube" not in lex.adjectives
    assert lex.decide("the red spherical toy") == ("kind", "ball", ())
    assert lex.decide("the cube shaped gadget") == ("kind", "cube", ())
    assert lex.decide("the spherical lamp") == ("absent", "", ())


def test_object_phrase_ends_at_locations_clauses_and_modal_verbs(lex):
    assert lex.decide("take the red mallard to the table") == ("kind", "duck", ())
    assert lex.decide("the red piece on the table") is None           # a category word, then a location
    assert lex.decide("okay robot, the red mallard") == ("kind", "duck", ())
    assert lex.decide("can you see the red mallard?") == ("kind", "duck", ())
    assert lex.decide("bring over the red cube when you can") is None
    assert lex.decide("the red can") == ("kind", "cylinder", ())
    assert lex.decide("the mallard that is red") == ("kind", "duck", ())
    assert lex.decide("the red mallard thing") == ("kind", "duck", ())  # a trailing category word is no head
    # colour words are not nouns where they colour something, or where only a colour fits
    assert lex.decide("the road cone painted peach") is None
    assert lex.decide("peach, the bottle") is None


def test_training_wordings_never_contradicted(lex):
    """What the lookup decides on the training generator's wordings agrees with their targets."""
    for q in W.training_wordings(3000, seed=4):
        d = lex.decide(q.text)
        if d is None:
            continue
        what, val, mods = d
        if what == "absent":
            assert not q.shapes, q.text
        elif what == "kind":
            assert val in q.shapes, q.text
        else:
            assert not set(mods) & set(q.shapes), q.text


def test_rule_sets_and_clears_kinds():
    rule = N.NounRule(KINDS)
    head = np.full(len(KINDS), 0.5, np.float32)
    out = rule.apply("the red tennis ball can", head)
    assert out[KINDS.index("cylinder")] == 1.0 and out[KINDS.index("ball")] == 0.0 and out[KINDS.index("mug")] == 0.5
    assert not rule.apply("the red goblet", head).any()
    np.testing.assert_array_equal(rule.apply("the red cube", head), head)
    # a head of fewer kinds (the 3-shape heads) ignores kinds it does not score
    small = N.NounRule(("cube", "ball", "cylinder"))
    np.testing.assert_array_equal(small.apply("the red mallard", np.zeros(3, np.float32)), np.zeros(3))


def test_accept_mode_only_accepts_the_kind_the_head_noun_names():
    """mode="accept": the head noun's kind is accepted; nothing is taken away (modifiers, "not ours")."""
    rule = N.NounRule(KINDS, mode="accept")
    head = np.full(len(KINDS), 0.5, np.float32)
    out = rule.apply("the blue soup can", head)
    assert out[KINDS.index("cylinder")] == 1.0
    np.testing.assert_array_equal(np.delete(out, KINDS.index("cylinder")), np.delete(head, KINDS.index("cylinder")))
    out = rule.apply("the red tennis ball can", head)
    assert out[KINDS.index("cylinder")] == 1.0 and out[KINDS.index("ball")] == 0.5   # the modifier keeps its score
    np.testing.assert_array_equal(rule.apply("the red goblet", head), head)          # "not ours": left to the head
    with pytest.raises(ValueError, match="mode"):
        N.NounRule(KINDS, mode="some")


def test_reject_mode_only_takes_kinds_away_for_a_head_that_is_not_ours():
    rule = N.NounRule(KINDS, mode="reject")
    head = np.full(len(KINDS), 0.5, np.float32)
    assert not rule.apply("the red goblet", head).any()
    np.testing.assert_array_equal(rule.apply("the red tennis ball can", head), head)   # nothing added or taken
    np.testing.assert_array_equal(rule.apply("the blue soup can", head), head)


def test_a_noun_naming_a_shade_is_part_of_the_colour_and_shape_words_ground_plain_nouns(lex):
    """"poppy red", "lipstick red": the noun before a colour word names the shade, not the object; "tube",
    which the noun table only lists as a noun, is a cylinder by the shape table."""
    assert lex.decide("can I get the poppy red cardboard tube") == ("kind", "cylinder", ())
    assert lex.decide("the lipstick red goblet") == ("absent", "", ())
    assert lex.object_phrase("the poppy red square box") == []


def _tiny_wordnet(d, syn):
    """Write a WordNet dict folder: ``syn`` is {offset: (lexfile, lemmas, hypernyms)} in sense order (a
    hypernym written "i:OFFSET" is an instance's, a proper name's)."""
    lines = {}
    for off, (lex, lemmas, ups) in syn.items():
        ptrs = " ".join(f"@i {u[2:]} n 0000" if u.startswith("i:") else f"@ {u} n 0000" for u in ups)
        words = " ".join(f"{w} 0" for w in lemmas)
        lines[off] = f"{off} {lex:02d} n {len(lemmas):02x} {words} {len(ups):03d} {ptrs} | gloss"
    # data.noun is read line by line (offsets are keys, not byte positions, in this reader)
    (d / "data.noun").write_text("  licence header\n" + "\n".join(lines.values()) + "\n")
    idx = {}
    for off, (_lex, lemmas, _u) in syn.items():
        for w in lemmas:
            idx.setdefault(w, []).append(off)
    (d / "index.noun").write_text("  header\n" + "\n".join(
        f"{w} n {len(o)} 1 @ {len(o)} 1 {' '.join(o)}" for w, o in sorted(idx.items())) + "\n")
    for pos in ("verb", "adj", "adv"):
        (d / f"index.{pos}").write_text("  header\n")


def test_build_table_is_up_only_and_skips_ambiguous(tmp_path):
    """A tiny WordNet: is-a upwards within max_up, first physical sense, a word reaching two kinds is left out."""
    d = tmp_path
    _tiny_wordnet(d, {  # offset: (lexfile, lemmas, hypernyms)
        "00000001": (6, ["container"], []),
        "00000002": (6, ["cup"], ["00000001"]),           # training word of mug
        "00000003": (6, ["stein"], ["00000002"]),          # is-a cup: mug
        "00000004": (6, ["bottle"], ["00000001"]),         # training word of bottle
        "00000005": (6, ["cupbottle"], ["00000002", "00000004"]),   # reaches both: left out
        "00000006": (6, ["jar"], ["00000001"]),            # a sibling, not below cup: not grounded
        "00000007": (6, ["glass"], ["00000001"]),          # training absent kind
        "00000008": (6, ["goblet"], ["00000007"]),
        "00000009": (6, ["teacup"], ["00000010"]),
        "00000010": (6, ["x1"], ["00000011"]),
        "00000011": (6, ["x2"], ["00000012"]),
        "00000012": (6, ["x3"], ["00000002"]),             # teacup is 4 steps below cup
    })
    t = N.build_table(d, {"mug": ("cup",), "bottle": ("bottle",)}, ("glass",), max_up=3)
    assert t["words"]["stein"] == "mug"
    assert t["words"]["goblet"] == N.ABSENT
    assert "cupbottle" not in t["words"] and "jar" not in t["words"] and "teacup" not in t["words"]
    assert "cup" not in t["words"] and "glass" not in t["words"]
    assert N.build_table(d, {"mug": ("cup",)}, (), max_up=4)["words"]["teacup"] == "mug"


def test_build_table_a_written_work_is_a_book_before_its_rarer_physical_senses(tmp_path):
    """A noun whose most frequent (non-proper-name) sense is a written work grounds as the kind whose training
    word's most frequent sense is a written work ("atlas": a book of maps, though its first *physical* sense is
    a column); a training word's most frequent sense of another non-physical kind seeds nothing ("sphere":
    a domain)."""
    d = tmp_path
    _tiny_wordnet(d, {
        "00000001": (10, ["writing"], []),
        "00000002": (10, ["book"], ["00000001"]),          # book's most frequent sense: a written work
        "00000003": (6, ["book", "volume"], ["00000009"]),   # book the object
        "00000004": (18, ["atlas"], ["i:00000010"]),        # Atlas the Titan: a proper name, skipped
        "00000005": (10, ["atlas"], ["00000002"]),         # a book of maps
        "00000006": (6, ["atlas", "telamon"], ["00000007"]),   # a column shaped as a man
        "00000007": (6, ["pillar"], ["00000009"]),          # training word of cylinder
        "00000008": (9, ["sphere"], []),                   # sphere's most frequent sense: a domain
        "00000009": (6, ["artifact"], []),
        "00000010": (18, ["titan"], []),
        "00000011": (9, ["arena"], ["00000008"]),          # a domain: no thing
        "00000012": (6, ["arena"], ["00000009"]),
        "00000013": (6, ["sphere"], ["00000009"]),          # the ball
    })
    kinds = {"book": ("book",), "cylinder": ("pillar",), "ball": ("sphere",)}
    t = N.build_table(d, kinds, ())
    assert t["words"]["atlas"] == "book"
    assert "arena" not in t["words"]
    assert N.build_table(d, kinds, (), main_sense=False)["words"]["atlas"] == "cylinder"


def test_heads_mode_accepts_and_rejects_by_the_head_noun_only():
    rule = N.NounRule(KINDS, mode="heads")
    head = np.full(len(KINDS), 0.5, np.float32)
    assert rule.apply("the blue soup can", head)[KINDS.index("cylinder")] == 1.0
    assert not rule.apply("the red goblet", head).any()
    out = rule.apply("the red tennis ball can", head)
    assert out[KINDS.index("cylinder")] == 1.0 and out[KINDS.index("ball")] == 0.5   # modifiers left alone


def test_a_compound_that_is_not_what_its_table_grounded_last_word_names_is_its_own_noun(lex):
    """WordNet's "watering can" is not a can of ours (a can grounds as a cylinder only through the table):
    the compound is a noun of its own, not read by its last word; a compound of a *training* word is
    still what that word names ("salad bowl")."""
    assert lex.units["watering can"] == ("noun", "")
    assert lex.object_phrase("the red watering can") == []   # a noun alone: nothing to decide
    assert lex.decide("the red watering can") is None
    assert lex.decide("the blue soup can") == ("kind", "cylinder", ())
    table = N.load_table()
    assert "watering can" in table["nouns"] and "can" in table["words"]
