#!/usr/bin/env python3
"""Generates the word-variant tables the grounding check ships, from WordNet 3.0
as the Debian package `wordnet-base` installs it (/usr/share/wordnet).

    apt-get install wordnet-base
    python3 tools/wordnet_variants.py [WORDNET_DIR] [OUT_DIR]

writes OUT_DIR (default src/core/grounding/data) spellings.txt and synonyms.txt,
one line per word: the word, a tab, its variants separated by spaces. Words are
WordNet lemmas of letters only, lower-case.

- spellings.txt: UK/US spelling pairs, both ways: two lemmas of one synset that
  one of the spelling rules below turns into each other (colour/color,
  favourite/favorite, enrol/enroll, centre/center, analyse/analyze, ...).
- synonyms.txt: for each lemma, the other lemmas of its most frequent sense per
  part of speech, and the lemmas of that sense's direct hypernym synset when it
  is a verb ("enroll" → "register"; one way: a claim's word may be found as
  the more general word, not the other way round).

Deterministic: the same WordNet gives the same files.
"""
import os
import re
import sys

WN = sys.argv[1] if len(sys.argv) > 1 else "/usr/share/wordnet"
OUT = sys.argv[2] if len(sys.argv) > 2 else os.path.join(
    os.path.dirname(__file__), "..", "src", "core", "grounding", "data")
POS = {"n": "noun", "v": "verb", "a": "adj", "r": "adv"}
WORD = re.compile(r"^[a-z]{3,}$")

# UK → US rewrites; a pair of lemmas is a spelling pair when one rewrite of
# one gives the other.
RULES = [
    ("our", "or"), ("ise", "ize"), ("isa", "iza"), ("isi", "izi"), ("yse", "yze"),
    ("ysi", "yzi"), ("tre", "ter"), ("bre", "ber"), ("ogue", "og"), ("ence", "ense"),
    ("ae", "e"), ("oe", "e"), ("mme", "m"), ("ll", "l"), ("l", "ll"), ("eable", "able"),
]


def rewrites(w):
    for uk, us in RULES:
        start = 0
        while True:
            i = w.find(uk, start)
            if i < 0:
                break
            yield w[:i] + us + w[i + len(uk):]
            start = i + 1


def records(kind, pos):
    """The fields of each entry line of WordNet's `kind` file (data, index) for `pos`."""
    with open(os.path.join(WN, kind + "." + POS[pos]), encoding="latin-1") as f:
        for line in f:
            # The licence header's lines start with two spaces.
            if not line.startswith("  "):
                yield line.split(" | ")[0].split()


def synsets(pos):
    """offset → (lemmas, hypernym offsets)."""
    out = {}
    for parts in records("data", pos):
        off, n = parts[0], int(parts[3], 16)
        lemmas = [parts[4 + 2 * i].lower() for i in range(n)]
        # Adjective satellites mark their position: "big(a)".
        lemmas = [re.sub(r"\(.*\)$", "", x) for x in lemmas]
        k = 4 + 2 * n
        p = int(parts[k])
        hyper = [parts[k + 2 + 4 * j] for j in range(p) if parts[k + 1 + 4 * j] in ("@", "@i")]
        out[off] = (lemmas, hyper)
    return out


def first_senses(pos):
    """lemma → its most frequent synset (index files list senses by frequency)."""
    out = {}
    for parts in records("index", pos):
        lemma, p_cnt = parts[0], int(parts[3])
        offsets = parts[4 + p_cnt + 2:]
        if offsets:
            out[lemma] = offsets[0]
    return out


def main():
    spellings, synonyms = {}, {}

    def add(table, a, b):
        if a != b and WORD.match(a) and WORD.match(b):
            table.setdefault(a, set()).add(b)
            table.setdefault(b, set()).add(a)

    for pos in POS:
        data = synsets(pos)
        for lemmas, _ in data.values():
            for a in lemmas:
                for b in rewrites(a):
                    if b in lemmas:
                        add(spellings, a, b)
        for lemma, off in first_senses(pos).items():
            lemmas, hyper = data[off]
            others = list(lemmas)
            if pos == "v":
                for h in hyper:
                    others += data[h][0]
            for other in others:
                if other != lemma and WORD.match(lemma) and WORD.match(other):
                    synonyms.setdefault(lemma, set()).add(other)
    os.makedirs(OUT, exist_ok=True)
    for name, table in (("spellings.txt", spellings), ("synonyms.txt", synonyms)):
        with open(os.path.join(OUT, name), "w", encoding="utf-8") as f:
            for w in sorted(table):
                f.write(w + "\t" + " ".join(sorted(table[w])) + "\n")


if __name__ == "__main__":
    main()
