#!/usr/bin/env python3
"""Writes probe answers for the grounding check from the source texts of labelled
files (the dev sets under ../shared/grounding/), one `check` record per line, each
citing its own source as [^1]:

    python3 tools/grounding_probes.py spans     FILE... > spans.jsonl
    python3 tools/grounding_probes.py fragments FILE... > fragments.jsonl
    python3 tools/grounding_probes.py edits     FILE... > edits.jsonl
    python3 tools/grounding_probes.py swaps     FILE... > swaps.jsonl
    python3 tools/grounding_probes.py ties      FILE... > ties.jsonl
    python3 tools/grounding_probes.py glued     FILE... > glued.jsonl
    python3 tools/grounding_probes.py lines     FILE... > lines.jsonl
    groundgate check spans.jsonl --out /tmp/spans

- spans: one to three pieces of a source, cut at every ". ", "! " or "? " whether
  or not the sentence rule ends a sentence there, copied verbatim: every one should
  score 1.0.
- fragments: 2 to 25 words of a source from a random word on, copied verbatim
  (trailing punctuation dropped): every one should score 1.0 unless it drops a
  negation its source sentence states ("to enter any tournaments" out of "decided
  not to enter any tournaments"), keeps the "not" of a "not only … but" and drops its
  "but" ("not only comprise"), or comes out of a yes/no question ("the account pay
  interest" out of "Does the account pay interest monthly?"), which states nothing.
- edits: sentences of 40 to 300 characters with one number of two to four digits
  changed (request ids "num…") or with "not" put after the first auxiliary verb of
  a sentence that has no negation ("neg…"): every one should be flagged. Sentences
  spanning lines are left out (only a line's last sentence would carry the marker).
- swaps: answers of three claims, each citing the source: three consecutive
  sentences of a source copied verbatim ("kept…", labelled supported), and the same
  with the middle one replaced by a sentence of another source ("swap…", labelled
  unsupported). A claim is judged on its own words: the swapped one should be
  flagged however well its neighbours are supported. `groundgate eval` reads the
  labels.
- ties: a sentence of 40 to 300 characters with an auxiliary verb and no negation,
  copied verbatim, against its source with the same sentence negated ("not" after
  the first auxiliary) put before it: both hold every word, and the copy should
  still score 1.0, held by its own sentence.
- glued: a source's sentences glued to each other at random, as scraped pages
  write them ("…the 12 Hour.Mount Panorama Circuit is…": no space after a period
  that the sentence rule reads as a sentence end), and one to three of its
  sentences copied verbatim from the glued text: every one should score 1.0.
- lines: a line of a source written over many lines (scraped pages, questions and
  answers, lists; at least four words), copied verbatim with the marker before its
  closing punctuation: every one should score 1.0.

Deterministic: a fixed seed per mode.
"""
import json
import random
import re
import sys

AUX = re.compile(r"\b(is|was|are|were|has|have|had|will|can|could|would|does|did)\b")


def sources(files):
    seen = set()
    for f in files:
        with open(f, encoding="utf-8") as fh:
            for line in fh:
                for s in json.loads(line).get("sources", []):
                    seen.add(str(s["payload"]))
    return sorted(seen)


def record(rid, answer, source):
    return {"request_id": rid, "answer": answer,
            "sources": [{"urn": "urn:probe:source", "payload": source}], "mode": "lenient"}


def spans(texts, rng):
    for s in texts:
        parts = [p for p in re.split(r"(?<=[.!?])\s+", s) if p.strip()]
        for _ in range(4):
            if not parts:
                break
            a = rng.randrange(len(parts))
            b = min(len(parts), a + rng.randint(1, 3))
            start = s.find(parts[a])
            end = s.find(parts[b - 1], start) + len(parts[b - 1])
            answer = s[start:end].strip()
            if answer and len(answer) <= 3000:
                yield answer + "[^1]", s


def fragments(texts, rng):
    for s in texts:
        words = list(re.finditer(r"\S+", s))
        for _ in range(3):
            if len(words) < 3:
                break
            a = rng.randrange(len(words))
            b = min(len(words), a + rng.randint(2, 25))
            answer = s[words[a].start():words[b - 1].end()].rstrip(".!?,;:")
            yield answer + "[^1].", s


def sentences(s):
    """The sentences of `s` of 40 to 300 characters, cut after ". ", "! ", "? "."""
    return [p.strip() for p in re.split(r"(?<=[.!?])\s+", s) if 40 < len(p.strip()) < 300]


def edits(texts, rng):
    for s in texts:
        parts = sentences(s)
        rng.shuffle(parts)
        for p in parts[:3]:
            p = p.rstrip(".!?")
            numbers = list(re.finditer(r"(?<![\d.,])\d{2,4}(?![\d,.])", p))
            if numbers:
                n = rng.choice(numbers)
                changed = int(n.group()) + rng.choice([1, 2, 3, 7, 10])
                yield "num", p[:n.start()] + str(changed) + p[n.end():] + "[^1].", s
            aux = AUX.search(p)
            if aux and not re.search(r"\b(not|never|no)\b|n't", p):
                yield "neg", p[:aux.end()] + " not" + p[aux.end():] + "[^1].", s


def swaps(texts, rng):
    def usable(s):
        return [p for p in sentences(s) if "\n" not in p]
    pool = [p for s in texts for p in usable(s)]
    for s in texts:
        parts = usable(s)
        if len(parts) < 3:
            continue
        a = rng.randrange(len(parts) - 2)
        kept = parts[a:a + 3]
        other = rng.choice(pool)
        if other in parts:
            continue
        swapped = [kept[0], other, kept[2]]
        yield "kept", " ".join(p + "[^1]" for p in kept), s
        yield "swap", " ".join(p + "[^1]" for p in swapped), s


def ties(texts, rng):
    for s in texts:
        parts = [p for p in sentences(s) if "\n" not in p]
        rng.shuffle(parts)
        for p in parts[:3]:
            aux = AUX.search(p)
            if aux and p[-1] in ".!" and not re.search(r"\b(not|never|no)\b|n't", p):
                negated = p[:aux.end()] + " not" + p[aux.end():]
                yield p[:-1] + "[^1]" + p[-1], negated + " " + s


# A period that the sentence rule reads as the end of a sentence glued to the
# next: after a lower-case word of two letters or more, a number of two digits
# or more, a decade, or a closing quote or bracket; before a capital and a
# lower-case letter.
GLUABLE = re.compile(r"(?:[a-z]{2}|\d{2}|\ds|[\")])[.!?]$")


def glued(texts, rng):
    for s in texts:
        parts = [p for p in re.split(r"(?<=[.!?])\s+", s) if p.strip()]
        if len(parts) < 2:
            continue
        # Glue each sentence the rule would cut there to the one before it.
        text, starts = parts[0], [0]
        for p in parts[1:]:
            joint = "" if GLUABLE.search(text) and re.match(r"[A-Z][a-z]", p) and rng.random() < 0.7 else " "
            text += joint
            starts.append(len(text))
            text += p
        for _ in range(3):
            a = rng.randrange(len(parts))
            b = min(len(parts), a + rng.randint(1, 3))
            answer = text[starts[a]:starts[b - 1] + len(parts[b - 1])].strip()
            if answer and len(answer) <= 3000:
                yield answer + "[^1]", text


def lines(texts, rng):
    for s in texts:
        rows = [r.strip() for r in s.split("\n") if len(r.split()) >= 4]
        for r in rng.sample(rows, min(12, len(rows))) if len(rows) > 1 else []:
            # The marker before the line's closing punctuation, as answers write it.
            body = r.rstrip(".!?")
            yield body + "[^1]" + r[len(body):], s


def main():
    if len(sys.argv) < 3 or sys.argv[1] not in ("spans", "fragments", "edits", "swaps", "ties", "glued", "lines"):
        sys.exit(__doc__)
    mode, texts = sys.argv[1], sources(sys.argv[2:])
    seed = {"spans": 5, "fragments": 7, "edits": 9, "swaps": 11, "ties": 13, "glued": 15, "lines": 17}[mode]
    rng = random.Random(seed)
    out = sys.stdout
    if mode == "edits":
        for i, (kind, answer, source) in enumerate(edits(texts, rng)):
            if "\n" not in answer:
                out.write(json.dumps(record(f"{kind}{i}", answer, source)) + "\n")
    elif mode == "swaps":
        for i, (kind, answer, source) in enumerate(swaps(texts, rng)):
            r = record(f"{kind}{i // 2}", answer, source)
            r["label"] = "supported" if kind == "kept" else "unsupported"
            out.write(json.dumps(r) + "\n")
    else:
        gen = {"spans": spans, "fragments": fragments, "ties": ties, "glued": glued, "lines": lines}[mode]
        for i, (answer, source) in enumerate(gen(texts, rng)):
            out.write(json.dumps(record(f"{mode}{i}", answer, source)) + "\n")


if __name__ == "__main__":
    main()
