"""Explicit tables from each native part-of-speech tagset to one coarse universal tag set, and NAME spans.

The coarse set is the 12 universal tags of Petrov, Das & McDonald (2012), with ``PUNCT`` written for their
``.``: every POS task, embedded or from the Hub, uses ``UNIVERSAL_TAGS`` in this order, so a model fine-tuned on
one language can be evaluated zero-shot on another. The tables follow Petrov's published mappings
(en-ptb, de-tiger, nl-alpino), patched where the corpora we ship differ from the tagset's documentation:

- Penn: quotes and brackets (````, ``''``, ``(``, ``)``, ``-LRB-``...) are PUNCT; the Italian WaCKy sample
  tags quotes and brackets ``(`` and ``:``/``;``/``-`` as ``FC``; the French WikiNews sample tags pronouns ``PR``
  and uses ``.`` for every punctuation mark (it has no number tag: numbers are JJ or DT, left as they are).
- STTS: the TIGER sample writes punctuation as the mark itself (``,`` ``.`` ``(`` ``"`` ``:`` ``-``) instead of
  ``$,`` ``$.`` ``$(``; PROAV (pronominal adverb, "darauf") is ADV as in Petrov's PAV.
- Parole/EAGLES (Spanish WikiCorpus, FreeLing short tags): W (dates) is NOUN as in pattern, Z* numbers NUM,
  Zu (units: km, h) NOUN.
- Wotan (Dutch TwNC): the tag is ``Head(features)`` optionally followed by digits that number the parts of a
  multi-word unit (``N(eigen,ev,neut)12``); only the head is looked up.
- UD UPOS and the older Turkish universal tags (CONJ, PRT, ONOM, AFFIX) are mapped the same way.

A tag missing from its table maps to X and is counted (``TagMapper.unknown``) rather than failing on real data;
``strict=True`` raises instead.

>>> TagMapper("penn").map("NNP")
'NOUN'
>>> bio_names([True, True, False, True])
['B-NAME', 'I-NAME', 'O', 'B-NAME']
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Literal, get_args

UNIVERSAL_TAGS: tuple[str, ...] = (
    "ADJ", "ADP", "ADV", "CONJ", "DET", "NOUN", "NUM", "PRON", "PRT", "PUNCT", "VERB", "X")
NAME_TAGS: tuple[str, ...] = ("O", "B-NAME", "I-NAME")

Tagset = Literal["penn", "penn-fr", "penn-it", "stts", "parole", "wotan", "upos", "tr-universal"]
TAGSETS: tuple[str, ...] = get_args(Tagset)

_PUNCT_MARKS = {p: "PUNCT" for p in (
    ".", ",", ":", ";", "(", ")", "[", "]", "{", "}", "``", "''", '"', "'", "-", "--", "!", "?", "#", "$",
    "-LRB-", "-RRB-", "-LCB-", "-RCB-", "-NONE-")}

PENN: dict[str, str] = {
    **_PUNCT_MARKS,
    "CC": "CONJ", "CD": "NUM", "DT": "DET", "EX": "DET", "FW": "X", "IN": "ADP", "JJ": "ADJ", "JJR": "ADJ",
    "JJS": "ADJ", "LS": "X", "MD": "VERB", "NN": "NOUN", "NNS": "NOUN", "NNP": "NOUN", "NNPS": "NOUN",
    "PDT": "DET", "POS": "PRT", "PRP": "PRON", "PRP$": "PRON", "RB": "ADV", "RBR": "ADV", "RBS": "ADV",
    "RP": "PRT", "SYM": "X", "TO": "PRT", "UH": "X", "VB": "VERB", "VBD": "VERB", "VBG": "VERB", "VBN": "VERB",
    "VBP": "VERB", "VBZ": "VERB", "WDT": "DET", "WP": "PRON", "WP$": "PRON", "WRB": "ADV",
}
PENN_PROPER = frozenset({"NNP", "NNPS"})

# The French WikiNews sample: a reduced Penn set plus PR (pronoun).
PENN_FR: dict[str, str] = {**PENN, "PR": "PRON"}
# The Italian WaCKy sample: Penn II plus FC (colon, semicolon, dash) and X (symbols such as '=' or '49°').
PENN_IT: dict[str, str] = {**PENN, "FC": "PUNCT", "X": "X"}

STTS: dict[str, str] = {
    **_PUNCT_MARKS, "$(": "PUNCT", "$,": "PUNCT", "$.": "PUNCT",
    "ADJA": "ADJ", "ADJD": "ADJ", "ADV": "ADV", "APPO": "ADP", "APPR": "ADP", "APPRART": "ADP", "APZR": "ADP",
    "ART": "DET", "CARD": "NUM", "FM": "X", "ITJ": "X", "KOKOM": "CONJ", "KON": "CONJ", "KOUI": "CONJ",
    "KOUS": "CONJ", "NE": "NOUN", "NN": "NOUN", "NNE": "NOUN", "PAV": "ADV", "PROAV": "ADV", "PDAT": "DET",
    "PDS": "PRON", "PIAT": "DET", "PIDAT": "DET", "PIS": "PRON", "PPER": "PRON", "PPOSAT": "PRON",
    "PPOSS": "PRON", "PRELAT": "DET", "PRELS": "PRON", "PRF": "PRON", "PTKA": "PRT", "PTKANT": "PRT",
    "PTKNEG": "PRT", "PTKVZ": "PRT", "PTKZU": "PRT", "PWAT": "DET", "PWAV": "ADV", "PWS": "PRON",
    "TRUNC": "X", "VAFIN": "VERB", "VAIMP": "VERB", "VAINF": "VERB", "VAPP": "VERB", "VMFIN": "VERB",
    "VMINF": "VERB", "VMPP": "VERB", "VVFIN": "VERB", "VVIMP": "VERB", "VVINF": "VERB", "VVIZU": "VERB",
    "VVPP": "VERB", "XY": "X",
}
STTS_PROPER = frozenset({"NE"})

PAROLE: dict[str, str] = {
    "AO": "ADJ", "AQ": "ADJ", "CC": "CONJ", "CS": "CONJ",
    "DA": "DET", "DD": "DET", "DE": "DET", "DI": "DET", "DN": "DET", "DP": "DET", "DT": "DET",
    **{f: "PUNCT" for f in ("Fa", "Faa", "Fat", "Fc", "Fd", "Fe", "Fg", "Fh", "Fi", "Fia", "Fit", "Fp", "Fpa",
                            "Fpt", "Fr", "Fra", "Frc", "Fs", "Ft", "Fx", "Fz")},
    "I": "X", "NC": "NOUN", "NCS": "NOUN", "NCP": "NOUN", "NP": "NOUN",
    "P0": "PRON", "PD": "PRON", "PE": "PRON", "PI": "PRON", "PN": "PRON", "PP": "PRON", "PR": "PRON",
    "PT": "PRON", "PX": "PRON", "RG": "ADV", "RN": "ADV", "SP": "ADP",
    **{f"V{a}{m}": "VERB" for a in "AMS" for m in "GIMNPS"},
    "W": "NOUN", "Z": "NUM", "Zd": "NUM", "Zm": "NUM", "Zp": "NUM", "Zu": "NOUN",
}
PAROLE_PROPER = frozenset({"NP"})

# Wotan: keyed by the head of the tag (text before '(').
WOTAN: dict[str, str] = {
    "Adj": "ADJ", "Adv": "ADV", "Art": "DET", "Conj": "CONJ", "Int": "X", "Misc": "X", "N": "NOUN",
    "Num": "NUM", "Prep": "ADP", "Pron": "PRON", "Punc": "PUNCT", "V": "VERB",
}

UPOS: dict[str, str] = {
    "ADJ": "ADJ", "ADP": "ADP", "ADV": "ADV", "AUX": "VERB", "CCONJ": "CONJ", "CONJ": "CONJ", "DET": "DET",
    "INTJ": "X", "NOUN": "NOUN", "NUM": "NUM", "PART": "PRT", "PRON": "PRON", "PROPN": "NOUN",
    "PUNCT": "PUNCT", "SCONJ": "CONJ", "SYM": "X", "VERB": "VERB", "X": "X",
}
UPOS_PROPER = frozenset({"PROPN"})
UD_UPOS_TAGS: tuple[str, ...] = ("ADJ", "ADP", "ADV", "AUX", "CCONJ", "DET", "INTJ", "NOUN", "NUM", "PART", "PRON",
                                 "PROPN", "PUNCT", "SCONJ", "SYM", "VERB", "X")
"""UD's own 17 part-of-speech tags (v2), unmapped: the ``upos`` task (Ma et al. 2021 tag UD v2.7 with them)."""

# The older universal tags of the Turkish treebanks (Petrov-style, plus ONOM and AFFIX).
TR_UNIVERSAL: dict[str, str] = {
    "ADJ": "ADJ", "ADP": "ADP", "ADV": "ADV", "AFFIX": "X", "CONJ": "CONJ", "DET": "DET", "NOUN": "NOUN",
    "NUM": "NUM", "ONOM": "X", "PRON": "PRON", "PRT": "PRT", "PUNCT": "PUNCT", "VERB": "VERB", "X": "X",
}

TABLES: dict[str, dict[str, str]] = {
    "penn": PENN, "penn-fr": PENN_FR, "penn-it": PENN_IT, "stts": STTS, "parole": PAROLE, "wotan": WOTAN,
    "upos": UPOS, "tr-universal": TR_UNIVERSAL,
}

_WOTAN_TAG = re.compile(r"^([A-Za-z]+)(\(([^)]*)\))?(\d*)$")


def _check_tables() -> None:
    for name, table in TABLES.items():
        bad = {t: c for t, c in table.items() if c not in UNIVERSAL_TAGS}
        assert not bad, f"{name}: targets outside the universal set: {bad}"


_check_tables()


class TagMapper:
    """Map native tags of one tagset to ``UNIVERSAL_TAGS``, counting tags that the table lacks.

    Args:
        tagset: one of ``TAGSETS``.
        strict: raise ``KeyError`` on a tag missing from the table instead of mapping it to X.
    """

    def __init__(self, tagset: Tagset, *, strict: bool = False):
        if tagset not in TABLES:
            raise ValueError(f"unknown tagset {tagset!r}; known: {', '.join(TAGSETS)}")
        self.tagset = tagset
        self.table = TABLES[tagset]
        self.strict = strict
        self.unknown: Counter[str] = Counter()
        self.counts: Counter[str] = Counter()

    def key(self, tag: str) -> str:
        """The table key of a native tag (the head of a Wotan tag, the tag itself otherwise)."""
        if self.tagset == "wotan":
            m = _WOTAN_TAG.match(tag)
            return m.group(1) if m else tag
        return tag

    def map(self, tag: str) -> str:
        coarse = self.table.get(self.key(tag))
        if coarse is None:
            if self.strict:
                raise KeyError(f"tag {tag!r} is not in the {self.tagset} table")
            self.unknown[tag] += 1
            coarse = "X"
        self.counts[coarse] += 1
        return coarse

    def x_share(self) -> float:
        total = sum(self.counts.values())
        return self.counts["X"] / total if total else 0.0


def is_proper(tagset: Tagset, tag: str) -> bool:
    """Whether a native tag marks a proper noun (the source of the NAME spans)."""
    if tagset in ("penn", "penn-fr", "penn-it"):
        return tag in PENN_PROPER
    if tagset == "stts":
        return tag in STTS_PROPER
    if tagset == "parole":
        return tag in PAROLE_PROPER
    if tagset == "wotan":
        return tag.startswith("N(eigen")
    if tagset == "upos":
        return tag in UPOS_PROPER
    if tagset == "tr-universal":
        return tag == "NNP"  # the Turkish XPOS column, see corpora._turkish_words
    raise ValueError(f"unknown tagset {tagset!r}; known: {', '.join(TAGSETS)}")


def bio_names(proper: list[bool]) -> list[str]:
    """BIO tags for maximal runs of proper-noun tokens: a PROXY for named entities, not real NER.

    Adjacent names with no token between them merge into one span (the gold tags cannot separate them).
    """
    out, prev = [], False
    for p in proper:
        out.append(("I-NAME" if prev else "B-NAME") if p else "O")
        prev = p
    return out
