"""A query's wording put in the form the query side reads best, before it is embedded.

Two rewrites, both no-ops on every training wording (so the query head needs no retraining):

English refers back to an object with "one": "the can, the blue one", "the doorknob, the one that is
yellow". The query head (MiniLM embedding -> colour/kind compatibility) learnt "one" as a category
word ("the red one": any red thing), so in those sentences it accepts every kind, and a thing that is
not in the map ("the doorknob, ...") matches whatever of that colour is there (measured on the
compounds development set: "the doorknob that is yellow" scores a cylinder 0.23, "the doorknob,
the one that is yellow" 0.96). :func:`canonical_query` rewrites such a sentence to the plain order
("the blue can", "the yellow doorknob").

Colour names that are also things ("cranberry", "apple green", "banana yellow") made the head read an
absent kind ("the cranberry cube": cube 0.0; the colour rule already had the colour right). With a
``colour_rule`` (:class:`~rlstack_perception.colour_words.ColourRule`), the first colour name is replaced
by the training colour word the rule grounds it with ("the cranberry cube" -> "the ruby cube"),
a word the head learnt as a colour; the rule's class is unchanged, since that word's nearest anchor is
itself. A shade named by a compound goes whole ("the candy-apple red cylinder", "the postbox red cylinder"
-> "the red cylinder"): its head is the basic colour term, and the word before it, a colour name or a
noun, only names the shade (as :func:`~rlstack_perception.colour_words.find_colour` reads it); left in,
the noun is read as the thing asked for (without the rewrite "the postbox red cylinder" scores the red
cylinder 0.07, "the taxi yellow bowl" the yellow bowl 0.0). Every other query is returned unchanged.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Container, Iterable

from rlstack_perception.colour_words import BASIC_TERMS, _norm, lexicon
from rlstack_perception.noun_words import CUT_WORDS, NOT_HEADS

# "<the X>, the one that is <C>" / "..., the one which is <C>" / "..., the one that's <C>"
_ONE_THAT_IS = re.compile(
    r"(?P<det>\b(?:the|that|this|a|an|my|your)\s+)(?P<np>[^,]+?)\s*,\s*the\s+one\s+"
    r"(?:(?:that|which)\s+is|that's|which's)\s+(?P<col>[^,?.!]+?)\s*(?P<rest>[,?.!].*)?$",
    re.IGNORECASE)
# "<the X>, the <C> one"
_THE_C_ONE = re.compile(
    r"(?P<det>\b(?:the|that|this|a|an|my|your)\s+)(?P<np>[^,]+?)\s*,\s*the\s+(?P<col>[^,?.!]+?)\s+one\b\s*"
    r"(?P<rest>[,?.!].*)?$",
    re.IGNORECASE)


def canonical_query(text: str, colour_rule=None, not_colours: Iterable[str] = (),
                    shade_nouns: Container[str] = (), keep: Container[str] = ()) -> str:
    """``text`` with a back-reference by "one" folded into the noun phrase it refers to ("the can, the
    blue one, please" -> "the blue can, please") and, with ``colour_rule``, its first colour name (phrases
    in ``not_colours`` are none: "brick") replaced by the anchor word the rule grounds it with (see
    :func:`anchor_colour` for ``shade_nouns`` and ``keep``)."""
    text = fold_one(text)
    return anchor_colour(text, colour_rule, not_colours, shade_nouns, keep) if colour_rule is not None else text


def anchor_colour(text: str, colour_rule, not_colours: Iterable[str] = (), shade_nouns: Container[str] = (),
                  keep: Container[str] = ()) -> str:
    """The first colour name of ``text`` replaced by its nearest anchor (a training colour word).

    A colour name lying wholly inside a phrase of ``not_colours`` (the kind words and absent things of the
    training lists: the "tea" of "tea tray", "tomato") is a thing's name, not a colour, and is left alone;
    one reaching past it is a colour ("apple green"). A colour name right before a basic colour term, and
    a phrase of ``shade_nouns`` (nouns) right before one, name a shade of that term: the whole compound is
    replaced by the term's anchor ("candy-apple red", "postbox red" -> "red"). Compounds in ``keep`` (the
    training colour words: "cherry red") are left as they are."""
    lex = lexicon()
    spans = [(m.start(), m.end(), _norm(m.group())) for m in re.finditer(r"[A-Za-z][A-Za-z']*", text)]
    words = [w for _a, _b, w in spans]
    blocked = [False] * len(words)
    phrases, longest = _phrase_set(tuple(not_colours))
    i = 0
    while i < len(words):
        n = next((n for n in range(min(longest, len(words) - i), 0, -1) if tuple(words[i:i + n]) in phrases), 0)
        for k in range(i, i + n):
            blocked[k] = True
        i += max(n, 1)
    for i in range(len(words)):
        for n in range(min(4, len(words) - i), 0, -1):
            name = " ".join(words[i:i + n])
            if all(blocked[i:i + n]) or name not in lex:   # a colour name only inside a thing's name is none
                continue
            if not all(_joins(text[spans[k][1]:spans[k + 1][0]]) for k in range(i, i + n - 1)):
                continue   # not one name across punctuation ("brick: red", "brick - red")
            start, end = i, i + n
            while (end < len(words) and words[end] in BASIC_TERMS and words[end] in lex
                   and not any(" ".join(words[end:end + k]) in lex for k in range(2, 5))
                   and _joins(text[spans[end - 1][1]:spans[end][0]])):
                name, end = words[end], end + 1     # "rose red": a red
            if end == i + n and name in BASIC_TERMS:     # the name found is the basic term itself
                start -= _shade_noun_before(text, spans, words, start, shade_nouns)   # "postbox red": a red
            if not _used_as_colour(text, spans, words, start, end - start):
                break   # "the banana that is yellow": the thing asked for, not its colour
            _colour, anchor = colour_rule.classify(lex[name])
            phrase = " ".join(words[start:end])
            if anchor == phrase or phrase in keep:
                return text
            return text[:spans[start][0]] + anchor + text[spans[end - 1][1]:]
    return text


def _shade_noun_before(text: str, spans, words, i: int, shade_nouns: Container[str]) -> int:
    """Number of words right before word ``i`` that name a shade of it: a phrase of up to three words of
    ``shade_nouns`` joined to it by spaces or hyphens ("postbox" in "the postbox red cube"), with the words
    hyphened to its front, since a hyphened compound is one word whose head is its last part ("stop-sign
    red", "candy-apple red")."""
    for m in range(min(3, i), 0, -1):
        if " ".join(words[i - m:i]) not in shade_nouns:
            continue
        if not all(_joins(text[spans[k][1]:spans[k + 1][0]]) for k in range(i - m, i)):
            continue
        while i - m > 0 and text[spans[i - m - 1][1]:spans[i - m][0]] == "-":
            m += 1
        return m
    return 0


@lru_cache(maxsize=1)
def training_colour_phrases() -> frozenset:
    """The training lists' colour words and absent colours, normalised: ``keep`` for :func:`anchor_colour`."""
    from rlstack_perception import wordings as W

    words = [w for ws in W.TRAIN_COLOURS.values() for w in ws] + list(W.TRAIN_ABSENT_COLOURS)
    return frozenset(_norm(w) for w in words)


def shade_nouns_of(units) -> frozenset:
    """The nouns that may name a shade before a basic colour term, from a
    :class:`~rlstack_perception.noun_words.NounLexicon`'s ``units``: things that are not ours (WordNet nouns,
    absent kinds, nouns grounded to a kind: "postbox", "taxi", "poppy"), without the attribute words that
    stand before a colour as adjectives ("the round green toy": round things, not a shade)."""
    from rlstack_perception import wordings as W

    attributes = {_norm(a) for a in W.TRAIN_ATTRIBUTE}
    return frozenset(w for w, (typ, _v) in units.items() if typ in ("noun", "kind", "absent") and w not in attributes)


@lru_cache(maxsize=8)
def _phrase_set(not_colours: tuple):
    """(set of word tuples, longest length) of the phrases, built once per list."""
    phrases = {tuple(_norm(p).split()) for p in not_colours} - {()}
    return phrases, max((len(p) for p in phrases), default=0)


def _joins(between: str) -> bool:
    """Whether two words with ``between`` between them can be one name: spaces, or a hyphen ("sky-blue")."""
    return not between.strip() or between == "-"


#: words before a colour name that make it the predicate ("the cube that is cranberry", "painted cranberry")
_PREDICATE_CUES = frozenset("is are was were that's thats it's its in coloured colored painted colour color "
                             "looks look looking seems appears".split())


def _used_as_colour(text: str, spans, words, i: int, n: int) -> bool:
    """Whether the colour name at words[i:i+n] is used as a colour: before the noun it colours (no
    punctuation or clause word between) or after a predicate cue; otherwise it is the noun itself."""
    if i > 0 and words[i - 1] in _PREDICATE_CUES:
        return True
    if i + n >= len(words):
        return False
    between = text[spans[i + n - 1][1]:spans[i + n][0]]
    return _joins(between) and words[i + n] not in CUT_WORDS and words[i + n] not in NOT_HEADS


def fold_one(text: str) -> str:
    """"the can, the blue one, please" -> "the blue can, please"; other texts unchanged."""
    for pattern in (_ONE_THAT_IS, _THE_C_ONE):
        m = pattern.search(text)
        if m is None or not m.group("np").strip() or not m.group("col").strip():
            continue
        if m.group("col").strip().lower() in ("one", "other", "same"):
            continue
        rest = m.group("rest") or ""
        return f"{text[:m.start()]}{m.group('det')}{m.group('col').strip()} {m.group('np').strip()}{rest}"
    return text
