"""Object nouns the query head has not seen, grounded through WordNet's is-a hierarchy.

The head (:mod:`rlstack_perception.query_head`) knows the training words of each kind
(``wordings.TRAIN_KINDS``) and reads most other object words as unknown kinds ("not here"), and it
reads compounds by their words rather than by their head ("tennis ball can" finds a ball). Two
general rules of English, with WordNet 3.0 (Princeton; the Debian package ``wordnet-base``) as the
lexicon:

* **is-a, upwards.** A noun one of whose physical senses (noun.animal, artifact, food, object,
  plant, shape) reaches, within ``max_up`` hypernym steps, a synset holding a *training* word of one
  kind names that kind ("mallard" is-a duck; "can" is in the synset of the training word "tin").
  Training absent kinds ground the same way to "not ours" ("goblet" is-a glass; "goose", four steps
  below "bird", is too far). A written work is a thing too: a training word's most frequent sense
  seeds its kind where it is one (noun.communication: "book"), and a noun whose most frequent sense
  is no thing is grounded by that sense where it reaches such a seed ("atlas" is a book of maps
  before it is a column). Each sense stops at the nearest such synset; a word whose senses reach
  different kinds (or a kind and "not ours") is left out, and so are seed synsets with more than
  ``max_descendants`` hyponyms below them (too general to name one kind), the training words
  themselves (the head knows them) and instance (proper-name) senses. Nothing goes downwards or
  sideways (a rabbit is not a hare).
* **The head noun decides.** In "tennis ball can" or "cup holder" the last noun is what is asked
  for; a noun before it only modifies it. The query's object phrase is the last run of adjacent
  nouns before a word that starts a location, destination or clause ("to", "on", "that", "when", a
  comma, ...); attributive colour words are skipped. If its head is a table noun, that kind is
  accepted (and kinds named only by modifiers are not); if it is "not ours" (a training absent kind
  or a table word grounded to one), no kind is accepted; if it is a noun the table does not ground
  but WordNet lists as a physical noun ("holder", "pump"), the kinds its modifiers name are not
  accepted. A head that is a training word of a kind, or a category word alone, leaves the head's
  outputs as they are.

The packaged table (``wordings/wordnet_nouns.json``, with WordNet's licence notice) is built from
the training lists only, offline; nothing is read from WordNet at run time:

    python -m rlstack_perception.noun_words --build /usr/share/wordnet   # rewrite the table
    python -m rlstack_perception.noun_words "the red tennis ball can"    # what a query's head names
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from functools import lru_cache
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np

from rlstack_perception.shape_words import WORDNET_NOTICE, _index_rows, _norm, _read_index

TABLE_FILE = Path(__file__).resolve().parent / "wordings" / "wordnet_nouns.json"
#: noun lexicographer files of physical things: animal, artifact, food, object, plant, shape
PHYSICAL_LEXFILES = (5, 6, 13, 17, 20, 25)
#: noun.communication: a written work ("book": its most frequent sense), whose copies are things
COMMUNICATION_LEXFILE = 10
#: those a kind's seed synsets may come from (none of our kinds is a plant: the pine cone is not a cone)
KIND_SEED_LEXFILES = (5, 6, 13, 17, 25)
#: modal verbs: WordNet has no modal senses, so its verb counts do not apply to them; "can" is a noun except
#: next to a pronoun ("can you ...", "... when you can"), the others are never read as nouns
MODALS = frozenset("can could will would may might must shall should".split())
PRONOUNS = frozenset("i you we he she they it me us them u someone somebody anyone anybody".split())
ABSENT = "-"   # the table's value for "a thing, not one of our kinds"
#: words that end an object phrase once one has been seen (a location, destination, clause, ...)
CUT_WORDS = frozenset("""to on in at near next by from for with of under behind beside besides into onto over
    across along against between inside outside around than when if while because so and or but that that's thats
    which who whose where where's wheres is are was it it's its""".split())
#: words WordNet lists as physical nouns that follow an object noun as adverbs or fillers, not as heads
NOT_HEADS = frozenset("""back home here there now today tonight tomorrow later please thanks thank again away too
    up down out first last bit lot right left somewhere anywhere everywhere asap pronto""".split())
_PUNCT = {",", "?", "!", ".", ":", ";", "-"}


def _tokens(text: str) -> List[str]:
    """Words (lower case, "-" inside a word splits it) and punctuation marks (" - " is one)."""
    t = text.lower().replace("\u2019", "'")
    t = re.sub(r"(?<=\w)-(?=\w)", " ", t)
    return re.findall(r"[a-z][a-z']*|[,?!.:;]|-", t)


# ----------------------------------------------------------------------------- building (offline)
def _tag_counts(path: Path) -> Dict[str, Tuple[int, int]]:
    """lemma -> (senses, senses tagged in WordNet's semantic concordance) of one part of speech."""
    return {p[0]: (int(p[2]), int(p[4 + int(p[3]) + 1])) for p in _index_rows(path)}


def _mostly_noun(word: str, counts) -> bool:
    """Whether a single word is used as a noun at least as often as as a verb, adjective or adverb (tagged
    senses; untagged: number of senses): "holder", "can" yes; "go", "get", "spot" no."""
    n, *other = [c.get(word, (0, 0)) for c in counts]
    if any(t for _s, t in [n] + other):
        return n[1] >= max(t for _s, t in other)
    return n[0] >= max(s for s, _t in other)


def _read_noun_data(path: Path) -> Dict[str, Tuple[int, List[str], List[str], bool]]:
    """offset -> (lexfile, lemmas, hypernym offsets, instance) of every noun synset (instance: a proper name,
    "Atlas" the Titan)."""
    out = {}
    for line in path.read_text(encoding="latin-1").splitlines():
        if line.startswith(" "):
            continue
        p = line.split("|", 1)[0].split()
        lex, wc = int(p[1]), int(p[3], 16)
        lemmas = [re.sub(r"\(.*\)$", "", p[4 + 2 * i]) for i in range(wc)]
        k = 4 + 2 * wc
        ups = [p[k + 2 + 4 * i] for i in range(int(p[k])) if p[k + 1 + 4 * i] == "@" and p[k + 3 + 4 * i] == "n"]
        instance = any(p[k + 1 + 4 * i] == "@i" for i in range(int(p[k])))
        out[p[0]] = (lex, lemmas, ups, instance)
    return out


def _descendants(data) -> Dict[str, int]:
    down: Dict[str, List[str]] = {}
    for off, (_lex, _lem, ups, _inst) in data.items():
        for u in ups:
            down.setdefault(u, []).append(off)
    memo: Dict[str, set] = {}

    def below(off):
        if off not in memo:
            memo[off] = set()   # cycles are not expected; this guards them
            s = set()
            for d in down.get(off, ()):
                s.add(d)
                s |= below(d)
            memo[off] = s
        return memo[off]

    sys.setrecursionlimit(max(10000, sys.getrecursionlimit()))
    return {off: len(below(off)) for off in data}


def build_table(wordnet_dir: Path, train_kinds: Dict[str, Sequence[str]], absent: Iterable[str],
                max_up: int = 3, max_descendants: int = 150, exclude: Iterable[str] = (),
                senses: str = "first", seed_senses: str = "all", main_sense: bool = True) -> dict:
    """{"words": {noun: kind or "-"}, "nouns": [other physical single-word nouns, and compounds that name
    something else than their table-grounded last word]} (see the module doc).
    ``exclude``: words left out of the seeds (for the leave-words-out check of :func:`main`). ``senses``:
    which physical senses of a noun are followed upwards: "first" (the most frequent one, WordNet's order)
    or "all"; ``seed_senses`` the same for the training words' synsets. ``main_sense``: also seed a kind
    with its training words' most frequent sense where that is a written work (noun.communication: "book"),
    and let a noun whose most frequent sense is no thing be grounded by that sense where it reaches a seed."""
    d = Path(wordnet_dir)
    index = _read_index(d / "index.noun")
    data = _read_noun_data(d / "data.noun")
    ndesc = _descendants(data)
    exclude = {_norm(w) for w in exclude}
    counts = [_tag_counts(d / f"index.{pos}") for pos in ("noun", "verb", "adj", "adv")]
    kind_words = {_norm(w): k for k, ws in train_kinds.items() for w in ws}
    absent = {_norm(w) for w in absent} - set(kind_words)
    # a training word also names WordNet's lemma spelt as one word or hyphenated ("pine cone": pinecone)
    spellings = lambda w: dict.fromkeys([w.replace(" ", "_"), w.replace(" ", ""), w.replace(" ", "-")])  # noqa: E731
    known = set(kind_words) | absent | {s.replace("_", " ") for w in set(kind_words) | absent for s in spellings(w)}

    def main_sense_of(offs) -> Optional[str]:
        """The most frequent of these senses (WordNet's order) that is not a proper name, whatever its lexfile."""
        return next((o for o in offs if not data[o][3]), None)

    seeds: Dict[str, set] = {}
    for word, label in [(w, k) for w, k in kind_words.items()] + [(w, ABSENT) for w in absent]:
        if word in exclude:
            continue
        lexfiles = PHYSICAL_LEXFILES if label == ABSENT else KIND_SEED_LEXFILES
        phys = list(dict.fromkeys(o for s in spellings(word) for o in index.get(s, []) if data[o][0] in lexfiles))
        main = main_sense_of(o for sp in spellings(word) for o in index.get(sp, []))
        extra = ([main] if main_sense and label != ABSENT and main and main not in phys
                 and data[main][0] == COMMUNICATION_LEXFILE else [])
        for off in (phys[:1] if seed_senses == "first" else phys) + extra:
            if label != ABSENT and ndesc[off] > max_descendants:
                continue
            seeds.setdefault(off, set()).add(label)
    seeds = {off: next(iter(s)) for off, s in seeds.items() if len(s) == 1}

    def sense_label(off) -> Optional[str]:
        """The label of the nearest seed above this synset (None: none within max_up, or a tie)."""
        frontier, seen = [off], {off}
        for _step in range(max_up + 1):
            found = {seeds[o] for o in frontier if o in seeds}
            if found:
                return next(iter(found)) if len(found) == 1 else "?"
            nxt = []
            for o in frontier:
                for u in data[o][2]:
                    if u not in seen:
                        seen.add(u)
                        nxt.append(u)
            frontier = nxt
        return None

    words: Dict[str, str] = {}
    nouns, compounds = set(), set()
    for lemma, offs in index.items():
        phys = [o for o in offs if data[o][0] in PHYSICAL_LEXFILES]
        if not phys:
            continue
        w = _norm(lemma)
        if not w or w in kind_words or w in absent or lemma.replace("_", " ") in known:
            continue
        if " " not in w and (w in MODALS - {"can"} or (w not in MODALS and not _mostly_noun(lemma, counts))):
            continue
        labels = {sense_label(o) for o in (phys[:1] if senses == "first" else phys)} - {None}
        main = main_sense_of(offs)
        main_label = sense_label(main) if main_sense and main and data[main][0] not in PHYSICAL_LEXFILES else None
        if main_label:
            # the word's most frequent sense is no thing but reaches a kind's written-work seed: that sense
            # decides ("atlas": a book of maps, not the column its first physical sense is)
            labels = {main_label}
        last = w.split()[-1]
        if " " in w and (last in kind_words or last in absent):
            # a compound is what its last word names ("salad bowl" is a bowl, even where WordNet's first
            # sense is the salad plate): one its senses ground elsewhere is left to that word
            if labels != {kind_words.get(last, ABSENT)}:
                continue
        if len(labels) == 1 and "?" not in labels:
            words[w] = next(iter(labels))
        elif " " not in w:
            nouns.add(w)
        else:
            compounds.add(w)
    # A compound WordNet lists that does not ground as its last word does, where that last word is itself
    # grounded only by this table ("watering can": a can is a cylinder here, a watering can is not): a noun
    # of its own, so that its last word is not read as the head. (A training word's compounds are what the
    # word names, above.)
    nouns |= {w for w in compounds if w not in words and words.get(w.split()[-1], ABSENT) != ABSENT}
    return {"words": dict(sorted(words.items())), "nouns": sorted(nouns - set(NOT_HEADS))}


# ----------------------------------------------------------------------------- run time
@lru_cache(maxsize=2)
def load_table(path: Path = TABLE_FILE) -> dict:
    d = json.loads(Path(path).read_text())
    return {"words": dict(d["words"]), "nouns": frozenset(d["nouns"])}


class NounLexicon:
    """Units of a query (training kind words, training absent kinds, category words, table nouns,
    colour names) and the decision of its object phrase's head noun."""

    def __init__(self, table: Optional[dict] = None, train_kinds: Optional[Dict[str, Sequence[str]]] = None,
                 absent: Optional[Iterable[str]] = None, category: Optional[Iterable[str]] = None,
                 colours: Optional[Iterable[str]] = None, shape_table: Optional[Dict[str, str]] = None) -> None:
        from rlstack_perception import wordings as W

        table = load_table() if table is None else table
        train_kinds = W.TRAIN_KINDS if train_kinds is None else train_kinds
        absent = W.TRAIN_ABSENT_KINDS if absent is None else absent
        category = W.TRAIN_CATEGORY if category is None else category
        if colours is None:
            from rlstack_perception.colour_words import lexicon

            colours = (list(lexicon()) + [c for cs in W.TRAIN_COLOURS.values() for c in cs]
                       + list(W.TRAIN_ABSENT_COLOURS))
        if shape_table is None:
            from rlstack_perception.shape_words import load_table as shapes

            shape_table = shapes()
        # unit -> (type, value): "train" kind word (head knows it), "kind" (table), "absent", "cat", "noun"
        self.units: Dict[str, Tuple[str, str]] = {}
        for w in table["nouns"]:
            self.units[w] = ("noun", "")
        for w, v in table["words"].items():
            self.units[w] = ("absent", "") if v == ABSENT else ("kind", v)
        for w, v in shape_table.items():
            # a shape word grounds what the noun table only lists as a noun ("tube")
            if self.units.get(_norm(w), ("noun", ""))[0] == "noun":
                self.units[_norm(w)] = ("kind", v)
        # shape words that are no noun of the table are adjectives ("spherical", "cube shaped"): as a modifier
        # one says what shape the head is ("spherical toy"), where a noun modifier names another thing
        # ("ball pump")
        self.adjectives = {_norm(w) for w in shape_table} - {_norm(w) for w in table["words"]} - set(table["nouns"])
        for w in absent:
            self.units[_norm(w)] = ("absent", "")
        for k, ws in train_kinds.items():
            for w in ws:
                self.units[_norm(w)] = ("train", k)
        for w in category:
            self.units[_norm(w)] = ("cat", "")
        for w in NOT_HEADS:
            self.units.pop(w, None)
        self.colours = {_norm(c) for c in colours} - {""}
        self.max_words = max(len(u.split()) for u in list(self.units) + list(self.colours))

    def _match(self, toks: List[str], i: int, vocab) -> int:
        """Length of the longest phrase of ``vocab`` starting at word ``i`` (0: none)."""
        for n in range(min(self.max_words, len(toks) - i), 0, -1):
            seg = toks[i:i + n]
            if any(t in _PUNCT for t in seg):
                continue
            if " ".join(t.replace("'", "") for t in seg) in vocab:
                return n
        return 0

    def object_phrase(self, text: str) -> List[Tuple[str, str, str]]:
        """The object phrase's units as (words, type, value), last one the head (empty: none found)."""
        toks = _tokens(text)
        runs: List[List[Tuple[str, str, str]]] = []
        cur: List[Tuple[str, str, str]] = []
        relevant = lambda run: any(t in ("train", "kind", "absent") for _w, t, _v in run)  # noqa: E731
        started = lambda run: any(t != "noun" for _w, t, _v in run)   # an object phrase, if only "the thing"  # noqa: E731
        i = 0
        while i < len(toks):
            t = toks[i]
            modal = t in MODALS and (t != "can" or (i > 0 and toks[i - 1] in PRONOUNS)
                                     or (i + 1 < len(toks) and toks[i + 1] in PRONOUNS))
            if t in _PUNCT or t in CUT_WORDS or modal:
                if cur:
                    runs.append(cur)
                    cur = []
                if any(started(r) for r in runs):
                    break
                i += 1
                continue
            nu = self._match(toks, i, self.units)
            nc = self._match(toks, i, self.colours)
            nxt = i + max(nu, nc, 1)
            attributive = nxt < len(toks) and toks[nxt] not in _PUNCT and toks[nxt] not in CUT_WORDS
            typ = self.units[" ".join(toks[i:i + nu]).replace("'", "")][0] if nu else ""
            # a colour word: skipped before what it colours, and wherever it could only be another noun
            # ("the cone painted peach"); a kind's own word that is also a colour name stays a noun ("the brick")
            if nc and nc >= nu and (attributive or typ not in ("train", "kind")):
                if cur:
                    runs.append(cur)
                    cur = []
                i += nc
                continue
            if nu and not nc and self._match(toks, i + nu, self.colours):
                # a noun naming a colour's shade ("poppy red", "lipstick red", "sky blue"): part of the colour
                if cur:
                    runs.append(cur)
                    cur = []
                i += nu
                continue
            if nu:
                w = " ".join(toks[i:i + nu]).replace("'", "")
                cur.append((w, typ, self.units[w][1]))
                i += nu
                continue
            if cur:
                runs.append(cur)
                cur = []
            i += 1
        if cur:
            runs.append(cur)
        runs = [r for r in runs if relevant(r)]
        return runs[-1] if runs else []

    def decide(self, text: str) -> Optional[Tuple[str, str, Tuple[str, ...]]]:
        """(what, value, modifier kinds): ("kind", K, mods) the head noun names kind K; ("absent", "", ())
        it names something else; ("not_modifiers", "", mods) it is another noun, so the kinds its
        modifiers name are not what is asked for; None: leave the head's outputs as they are."""
        run = self.object_phrase(text)
        while run and run[-1][1] == "cat" and len(run) > 1:
            run = run[:-1]       # "ball thing": the category word is not the head
        if not run:
            return None
        _w, typ, val = run[-1]
        adjective = tuple(dict.fromkeys(v for w2, t, v in run[:-1] if t == "kind" and w2 in self.adjectives))
        mods = tuple(dict.fromkeys(v for w2, t, v in run[:-1]
                                   if t in ("train", "kind") and v != val and w2 not in self.adjectives))
        if typ == "kind":
            return "kind", val, mods
        if typ == "absent":
            return "absent", "", ()
        if typ == "noun" and len(adjective) == 1:
            # "spherical toy": a thing of that shape (a head noun the table does not ground says no more)
            return "kind", adjective[0], tuple(m for m in mods if m != adjective[0])
        if typ == "noun" and mods:
            return "not_modifiers", "", mods
        return None


#: how much of the head-noun decision a :class:`NounRule` applies
NOUN_RULE_MODES = ("accept", "reject", "heads", "full")


class NounRule:
    """Kind compatibility from the head noun (see :class:`NounLexicon`): applied after the head.

    ``mode="full"``: a head noun that grounds to a kind accepts it, one that is "not ours" accepts
    none, and kinds named only by modifiers are not accepted. ``mode="accept"``: only the first (a
    head noun the table grounds to a kind accepts that kind: "soup *can*" is a cylinder; nothing is
    taken away). ``mode="reject"``: only the second (a head noun WordNet grounds as not one of ours,
    "the red *goblet*", accepts no kind; nothing is added). ``mode="heads"``: the first two, the head
    noun alone decides (modifiers are left to the query head)."""

    def __init__(self, kinds: Sequence[str], lexicon: Optional[NounLexicon] = None, mode: str = "full") -> None:
        if mode not in NOUN_RULE_MODES:
            raise ValueError(f"noun rule mode must be one of {', '.join(NOUN_RULE_MODES)}, got {mode!r}")
        self.kinds = tuple(kinds)
        self.lex = NounLexicon() if lexicon is None else lexicon
        self.mode = mode

    def apply(self, text: str, kind_compat: np.ndarray) -> np.ndarray:
        d = self.lex.decide(text)
        if d is None:
            return kind_compat
        what, val, mods = d
        out = np.array(kind_compat, np.float32, copy=True)
        if what == "absent" and self.mode != "accept":
            out[:] = 0.0
            return out
        if self.mode == "full":
            for m in mods:
                if m in self.kinds:
                    out[self.kinds.index(m)] = 0.0
        if what == "kind" and val in self.kinds and self.mode != "reject":
            out[self.kinds.index(val)] = 1.0
        return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="WordNet nouns: build the packaged table, or look up a query's head noun")
    ap.add_argument("query", nargs="*")
    ap.add_argument("--build", metavar="WORDNET_DIR", help="WordNet 3.0 dict folder (index.noun, data.noun)")
    ap.add_argument("--max-up", type=int, default=3)
    ap.add_argument("--max-descendants", type=int, default=150)
    args = ap.parse_args(argv)
    if args.build:
        from rlstack_perception import wordings as W

        t = build_table(Path(args.build), W.TRAIN_KINDS, W.TRAIN_ABSENT_KINDS, args.max_up, args.max_descendants)
        TABLE_FILE.write_text(json.dumps({
            "about": "Object nouns grounded through WordNet 3.0's noun hypernyms (is-a, upwards, at most max_up "
                     "steps, physical senses only) in synsets of the training words (rlstack_perception.wordings."
                     "TRAIN_KINDS: a kind; TRAIN_ABSENT_KINDS: '-', not one of ours; a written work, "
                     "noun.communication, where it is the word's most frequent sense; a compound whose last word "
                     "is a training word only where it grounds as that word does); 'nouns': other single-word "
                     "physical nouns (heads of compounds), and compounds that do not ground as their last word, "
                     "where that word is grounded by this table ('watering can'). Built by python -m "
                     "rlstack_perception.noun_words --build <wordnet dict dir>.",
            "source": "WordNet 3.0 (Debian package wordnet-base 1:3.0-37)", "license": WORDNET_NOTICE,
            "max_up": args.max_up, "max_descendants": args.max_descendants,
            "words": t["words"], "nouns": t["nouns"]}, separators=(",", ":")) + "\n")
        n_kind = sum(v != ABSENT for v in t["words"].values())
        print(f"{len(t['words'])} words ({n_kind} to a kind), {len(t['nouns'])} other nouns -> {TABLE_FILE}")
        return 0
    lex = NounLexicon()
    for q in args.query:
        print(q, "->", lex.object_phrase(q), lex.decide(q))
    return 0


if __name__ == "__main__":
    sys.exit(main())
