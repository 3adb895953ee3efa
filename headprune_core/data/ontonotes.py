"""OntoNotes 5 as the CoNLL-2012 shared task gives it (``ontonotes/conll2012_ontonotesv5``): He & Choi 2021's five
tasks read from one row format. Each Hub row is a document whose ``sentences`` hold, per sentence, ``words``,
``pos_tags`` and ``named_entities`` (class labels), ``parse_tree`` (a bracketed Penn Treebank string) and
``srl_frames`` (per predicate, BIO tags of its arguments).

Parsing is read as tags, one a word, so every task trains the same token classifier:

- constituency (CON) by Gomez-Rodriguez and Vilares's (2018) relative encoding: word ``i``'s tag is the change in
  the number of ancestors it shares with word ``i+1`` (against the previous pair), the label of their lowest common
  ancestor, and the chain of one-word constituents right above it; :func:`decode_spans` turns tags back into the
  tree's labelled spans, so a model's tags are scored as brackets;
- semantic roles (SRL) as one example per predicate, its BIO argument tags as given, the predicate's position kept
  (:func:`srl_examples`).

Unary chains (a constituent whose only child is another) are joined into one label (``S+VP``), as the encoding
needs, and the root ``TOP`` is left out: what :func:`spans` returns is what the encoding keeps.

>>> tree = parse_tree("(TOP (S (NP (NNP John)) (VP (VBZ sleeps)) (. .)))")
>>> words_of(tree)
['John', 'sleeps', '.']
>>> tags = constituency_tags(tree)
>>> tags
['1/S/NP', '0/S/VP', 'NONE//']
>>> sorted(decode_spans(tags)) == sorted(spans(tree))
True
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

ONTONOTES = "ontonotes/conll2012_ontonotesv5"
CONFIGS = ("english_v4", "english_v12", "chinese_v4", "arabic_v4")
"""The data set's configs: CoNLL-2012's v4 train/dev with v9 test per language, and the corrected v12 (English)."""
LANG_CONFIGS = {"en": "english_v4", "zh": "chinese_v4", "ar": "arabic_v4"}
"""The config a language reads (He & Choi 2021: English v4); ``english_v12`` is read by naming it as the config."""
TASKS = ("onto-pos", "onto-ner", "onto-dep", "onto-con", "onto-srl")
"""He & Choi 2021's five tasks, each a token classification over one row format (see :func:`examples`)."""
SRL_MARK = "[V]"
"""The word put before an SRL example's predicate, so that the tagger knows which predicate's arguments to tag."""
LAST = "NONE"
"""The first field of the last word's tag: it has no next word to share ancestors with."""


class BadTree(ValueError):
    """A parse tree that cannot be read: names what and where."""


@dataclass
class Node:
    """A constituent: its label, its children (nodes) or, for a part-of-speech node, its word."""

    label: str
    children: list[Node] = field(default_factory=list)
    word: str | None = None

    @property
    def is_leaf(self) -> bool:
        return self.word is not None


TOKEN = re.compile(r"\(|\)|[^\s()]+")


def parse_tree(text: str) -> Node:
    """The tree of a bracketed Penn Treebank string (OntoNotes' ``parse_tree``); a malformed one raises
    :class:`BadTree` naming the position."""
    tokens = TOKEN.findall(text)
    pos = 0

    def node() -> Node:
        nonlocal pos
        if pos >= len(tokens) or tokens[pos] != "(":
            raise BadTree(f"expected '(' at token {pos} of {text[:80]!r}")
        pos += 1
        label = tokens[pos] if pos < len(tokens) and tokens[pos] not in "()" else ""
        pos += bool(label)
        if pos + 1 < len(tokens) and tokens[pos] not in "()" and tokens[pos + 1] == ")":
            out = Node(label, word=tokens[pos])
            pos += 2
            return out
        out = Node(label)
        while pos < len(tokens) and tokens[pos] == "(":
            out.children.append(node())
        if pos >= len(tokens) or tokens[pos] != ")" or not out.children:
            raise BadTree(f"constituent {label!r} is not closed or has no children at token {pos} of {text[:80]!r}")
        pos += 1
        return out

    root = node()
    if pos != len(tokens):
        raise BadTree(f"text after the tree at token {pos} of {text[:80]!r}")
    return root


def words_of(tree: Node) -> list[str]:
    if tree.is_leaf:
        return [tree.word]
    return [w for child in tree.children for w in words_of(child)]


def _collapsed(tree: Node) -> Node:
    """The tree without ``TOP`` and with each unary chain of constituents joined into one label (``S+VP``); a
    part-of-speech node stays a leaf (its word's own constituent chain is kept on the node above it)."""
    if tree.label == "TOP" and len(tree.children) == 1 and not tree.children[0].is_leaf:
        tree = tree.children[0]
    if tree.is_leaf:
        return tree
    label = tree.label
    while len(tree.children) == 1 and not tree.children[0].is_leaf:
        tree = tree.children[0]
        label = f"{label}+{tree.label}"
    return Node(label, [_collapsed(c) for c in tree.children])


def _paths(tree: Node) -> list[list[tuple[int, str]]]:
    """Per word, its constituents from the root down (identity, label), part-of-speech node left out."""
    out: list[list[tuple[int, str]]] = []

    def walk(node: Node, above: list[tuple[int, str]]) -> None:
        if node.is_leaf:
            out.append(above)
            return
        here = [*above, (id(node), node.label)]
        for child in node.children:
            walk(child, here)

    walk(_collapsed(tree), [])
    return out


def constituency_tags(tree: Node) -> list[str]:
    """One tag a word, ``"{change}/{label}/{unary}"``: the change in the number of constituents the word shares with
    the next one (against the previous word's number), the label of their lowest common constituent, and the
    labels of the constituents that hold this word alone (``+``-joined; empty if none). The last word's tag is
    ``"NONE//{unary}"``."""
    paths = _paths(tree)
    tags, before = [], 0
    for i, path in enumerate(paths):
        shared = 0
        if i + 1 < len(paths):
            nxt = paths[i + 1]
            while shared < min(len(path), len(nxt)) and path[shared][0] == nxt[shared][0]:
                shared += 1
        alone = max(shared, before)
        unary = "+".join(label for _, label in path[alone:])
        if i + 1 < len(paths):
            tags.append(f"{shared - before}/{path[shared - 1][1]}/{unary}")
        else:
            tags.append(f"{LAST}//{unary}")
        before = shared
    return tags


def spans(tree: Node) -> set[tuple[str, int, int]]:
    """The labelled spans ``(label, start, end)`` (end exclusive) of the tree's constituents, as the encoding keeps
    them (``TOP`` left out, unary chains joined)."""
    out: set[tuple[str, int, int]] = set()

    def walk(node: Node, start: int) -> int:
        if node.is_leaf:
            return start + 1
        end = start
        for child in node.children:
            end = walk(child, end)
        out.add((node.label, start, end))
        return end

    walk(_collapsed(tree), 0)
    return out


def decode_spans(tags: list[str]) -> set[tuple[str, int, int]]:
    """The labelled spans that ``tags`` (:func:`constituency_tags`) encode: at each depth, the maximal runs of
    words whose neighbours share at least that many constituents, labelled by the pair whose lowest common
    constituent is at that depth; and each word's one-word constituents. Tags a model predicted may not form a
    tree: a depth below 1 is read as 1, and a run takes the label of its first pair at its depth."""
    fields = [t.split("/", 2) for t in tags]
    if any(len(f) != 3 for f in fields):
        raise ValueError(f"not a constituency tag: {next(t for t, f in zip(tags, fields) if len(f) != 3)!r}")
    depth, level, labels = [], 0, []
    for change, label, _ in fields[:-1]:
        level = max(1, level + int(change))
        depth.append(level)
        labels.append(label)
    out: set[tuple[str, int, int]] = set()
    for d in sorted(set(depth)):
        start = None
        for j in range(len(depth) + 1):
            inside = j < len(depth) and depth[j] >= d
            if inside and start is None:
                start = j
            elif not inside and start is not None:
                at = next((k for k in range(start, j) if depth[k] == d), None)
                if at is not None:
                    out.add((labels[at], start, j + 1))
                start = None
    for i, (_, _, unary) in enumerate(fields):
        if unary:
            out.add((unary, i, i + 1))
    return out


def srl_examples(words: list[str], frames: list[dict]) -> list[tuple[int, list[str]]]:
    """One example a predicate: (the predicate's word position, its BIO argument tags), from a sentence's
    ``srl_frames`` (``{"verb", "frames"}``). A frame of another length than the sentence, or without exactly one
    ``B-V``, raises naming the verb."""
    out = []
    for frame in frames:
        tags = list(frame["frames"])
        verbs = [i for i, t in enumerate(tags) if t == "B-V"]
        if len(tags) != len(words) or len(verbs) != 1:
            raise ValueError(f"SRL frame of {frame.get('verb')!r}: {len(tags)} tags for {len(words)} words, "
                             f"{len(verbs)} B-V (one expected)")
        out.append((verbs[0], tags))
    return out


# --- dependencies from the constituency trees: head rules -------------------------------------------------------
# Collins's (1999, Appendix A) head table: per phrase label, the direction to search its children and the labels
# to look for, in order; a phrase whose children hold none of them takes its first child in that direction. Noun
# phrases (and OntoNotes' NML) have their own rule (:func:`_np_head`); a label not listed searches left to right.
HEAD_RULES: dict[str, tuple[str, tuple[str, ...]]] = {
    "ADJP": ("left", ("NNS", "QP", "NN", "$", "ADVP", "JJ", "VBN", "VBG", "ADJP", "JJR", "NP", "JJS", "DT", "FW",
                      "RBR", "RBS", "SBAR", "RB")),
    "ADVP": ("right", ("RB", "RBR", "RBS", "FW", "ADVP", "TO", "CD", "JJR", "JJ", "IN", "NP", "JJS", "NN")),
    "CONJP": ("right", ("CC", "RB", "IN")),
    "FRAG": ("right", ()),
    "INTJ": ("left", ()),
    "LST": ("right", ("LS", ":")),
    "NAC": ("left", ("NN", "NNS", "NNP", "NNPS", "NP", "NAC", "EX", "$", "CD", "QP", "PRP", "VBG", "JJ", "JJS",
                     "JJR", "ADJP", "FW")),
    "PP": ("right", ("IN", "TO", "VBG", "VBN", "RP", "FW")),
    "PRN": ("left", ()),
    "PRT": ("right", ("RP",)),
    "QP": ("left", ("$", "IN", "NNS", "NN", "JJ", "RB", "DT", "CD", "NCD", "QP", "JJR", "JJS")),
    "RRC": ("right", ("VP", "NP", "ADVP", "ADJP", "PP")),
    "S": ("left", ("TO", "IN", "VP", "S", "SBAR", "ADJP", "UCP", "NP")),
    "SBAR": ("left", ("WHNP", "WHPP", "WHADVP", "WHADJP", "IN", "DT", "S", "SQ", "SINV", "SBAR", "FRAG")),
    "SBARQ": ("left", ("SQ", "S", "SINV", "SBARQ", "FRAG")),
    "SINV": ("left", ("VBZ", "VBD", "VBP", "VB", "MD", "VP", "S", "SINV", "ADJP", "NP")),
    "SQ": ("left", ("VBZ", "VBD", "VBP", "VB", "MD", "VP", "SQ")),
    "UCP": ("right", ()),
    "VP": ("left", ("TO", "VBD", "VBN", "MD", "VBZ", "VB", "VBG", "VBP", "VP", "ADJP", "NN", "NNS", "NP")),
    "WHADJP": ("left", ("CC", "WRB", "JJ", "ADJP")),
    "WHADVP": ("right", ("CC", "WRB")),
    "WHNP": ("left", ("WDT", "WP", "WP$", "WHADJP", "WHPP", "WHNP")),
    "WHPP": ("right", ("IN", "TO", "FW")),
}
NOUN_PHRASES = ("NP", "NML", "NX")
ROOT = "ROOT"
"""The dependency tag of the sentence's head word (it has no head)."""
EMPTY = "-NONE-"
"""The part-of-speech label of an empty element (a trace): not a word, left out."""


def bare(label: str) -> str:
    """A phrase label without its function tags and indices (``NP-SBJ-1`` -> ``NP``; ``-LRB-`` stays)."""
    if label.startswith("-"):
        return label
    return re.split(r"[-=]", label, maxsplit=1)[0] or label


def _np_head(labels: list[str]) -> int:
    if labels[-1] == "POS":
        return len(labels) - 1
    for wanted, direction in ((("NN", "NNP", "NNPS", "NNS", "NX", "NML", "POS", "JJR"), "right"),
                              (("NP",), "left"), (("$", "ADJP", "PRN"), "right"), (("CD",), "right"),
                              (("JJ", "JJS", "RB", "QP"), "right")):
        order = range(len(labels)) if direction == "left" else range(len(labels) - 1, -1, -1)
        found = next((i for i in order if labels[i] in wanted), None)
        if found is not None:
            return found
    return len(labels) - 1


def head_child(label: str, children: list[str]) -> int:
    """Which of a phrase's children (their bare labels) is its head, by :data:`HEAD_RULES`."""
    label = bare(label)
    if label in NOUN_PHRASES:
        return _np_head(children)
    direction, wanted = HEAD_RULES.get(label, ("left", ()))
    order = list(range(len(children))) if direction == "left" else list(range(len(children) - 1, -1, -1))
    for want in wanted:
        found = next((i for i in order if children[i] == want), None)
        if found is not None:
            return found
    return order[0]


def _without_empty(tree: Node) -> Node | None:
    if tree.is_leaf:
        return None if tree.label == EMPTY else tree
    kept = [c for c in (_without_empty(c) for c in tree.children) if c is not None]
    return Node(tree.label, kept) if kept else None


def heads(tree: Node) -> list[int]:
    """Each word's head as a word position (0-based; -1 for the sentence's head word), from the tree by the head
    rules: a phrase's head word is its head child's, and the head word of every other child depends on it."""
    tree = _without_empty(tree)
    if tree is None:
        return []
    out: list[int] = []

    def walk(node: Node) -> int:
        if node.is_leaf:
            out.append(-1)
            return len(out) - 1
        words = [walk(child) for child in node.children]
        h = head_child(node.label, [bare(c.label) for c in node.children])
        for i, w in enumerate(words):
            if i != h:
                out[w] = words[h]
        return words[h]

    walk(tree)
    return out


def dependency_tags(tree: Node) -> list[str]:
    """One tag a word: the offset of its head (``+2``: two words to the right, ``-1``: the word before), or
    :data:`ROOT`. A tagger that gets a word's tag right has its (unlabelled) attachment right: accuracy is UAS."""
    return [ROOT if h < 0 else f"{h - i:+d}" for i, h in enumerate(heads(tree))]


# --- the five tasks' examples -----------------------------------------------------------------------------------
def _tree_of(sentence: dict) -> Node | None:
    text = sentence.get("parse_tree")
    if not text or not text.strip():
        return None
    tree = _without_empty(parse_tree(text))
    got, words = ([] if tree is None else words_of(tree)), list(sentence["words"])
    if got != words:
        at = next((i for i, (a, b) in enumerate(zip(got, words)) if a != b), min(len(got), len(words)))
        raise BadTree(f"the tree's {len(got)} words are not the sentence's {len(words)} (they differ from word {at})")
    return tree


def examples(sentence: dict, task: str, names: dict[str, list[str] | None]) -> list[tuple[list[str], list[str]]]:
    """One sentence of a Hub row as ``task``'s examples (words, tag names): POS and NER as given (class indices
    read through ``names``, ``{"pos_tags": [...], "named_entities": [...]}``); DEP as :func:`dependency_tags` and
    CON as :func:`constituency_tags` of its tree (none when it has no tree); SRL one example a predicate, with
    :data:`SRL_MARK` before the predicate (tagged ``O``) and the predicate's own ``B-V`` read as ``O`` (the
    predicate is given, not found: only its arguments are scored, as the CoNLL-2005 scorer does)."""
    words = list(sentence["words"])
    if task in ("onto-pos", "onto-ner"):
        column = "pos_tags" if task == "onto-pos" else "named_entities"
        table = names.get(column)
        tags = [table[t] if isinstance(t, int) and table is not None else str(t) for t in sentence[column]]
        if len(tags) != len(words):
            raise ValueError(f"{len(tags)} {column} for {len(words)} words")
        return [(words, tags)]
    if task in ("onto-dep", "onto-con"):
        tree = _tree_of(sentence)
        if tree is None:
            return []
        return [(words, dependency_tags(tree) if task == "onto-dep" else constituency_tags(tree))]
    if task == "onto-srl":
        out = []
        for v, tags in srl_examples(words, sentence.get("srl_frames") or []):
            tags = ["O" if t in ("B-V", "I-V") else t for t in tags]
            out.append((words[:v] + [SRL_MARK] + words[v:], tags[:v] + ["O"] + tags[v:]))
        return out
    raise ValueError(f"not an OntoNotes task: {task!r} (known: {', '.join(TASKS)})")


def split_examples(rows, task: str, names: dict[str, list[str] | None], where: str
                   ) -> tuple[list[list[str]], list[list[str]], int]:
    """Every example of ``task`` in a split's rows (documents of sentences): words, tag names, and how many
    sentences gave none (no tree for DEP/CON, no predicate for SRL). A sentence that cannot be read raises naming
    ``where``, the document and the sentence."""
    words, tags, empty = [], [], 0
    for row in rows:
        for j, sentence in enumerate(row["sentences"] or []):
            try:
                got = examples(sentence, task, names)
            except ValueError as err:  # BadTree is one
                raise ValueError(f"{where}: document {row.get('document_id')!r}, sentence {j}: {err}") from None
            empty += not got
            for w, t in got:
                words.append(w)
                tags.append(t)
    return words, tags, empty
