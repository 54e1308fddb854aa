#!/usr/bin/env python3
"""Looks for answers and sources that make the grounding check take more than
linear time: writes records that repeat a few words the check's rules react to
(comparatives, negations, qualifiers, ranks, numbers with units and scales,
dates, times, acronyms, names, quotes, markers, sentence ends) up to a few
hundred kilobytes, runs `groundgate check` on each alone and prints the records
that cost the most CPU, worst first:

    python3 tools/grounding_hostile.py target/release/groundgate --seed 5 --records 200

Each record puts its pattern in one of six shapes: one long claim (the answer),
one long source, both, many short claims against a source of many sentences,
the same citing two sources, or many claims against one long sentence. A record
of a few hundred kilobytes is grounded in a few hundredths of a second; one that
takes seconds has found work that grows faster than its input (repeat it at two
sizes to see). The check runs with limits raised so that the whole answer is
grounded (as it is under the defaults, where such an answer is also too long).

Deterministic: the seed fixes the patterns.
"""
import argparse
import json
import os
import random
import re
import subprocess
import tempfile

WORDS = [
    "than", "not", "never", "no", "without", "both", "and", "most", "one of", "second",
    "largest", "also", "may", "expected to", "rose", "fell", "up", "down", "higher",
    "lower", "at least", "at most", "between", "from", "to", "first", "older", "was born",
    "who", "which", "he", "It", "did", "Do you", "the", "is", "?", "!", ".", ",", ";", ":",
    "\n", "\t", "-", "--", "'s", "\u2019", "\u201c", "\u201d", "\u2026", '"', "(", ")",
    "[^1]", "[^2]", "1.5", "2,000", "1984", "2004-05-12", "March 3", "Jan", "09:00",
    "5 p.m.", "25 bps", "half a million", "a hundred", "twenty-one", "million", "billion",
    "percent", "%", "Q3", "FY2023", "2x", "No.", "A.", "Mr.", "St.", "U.S.", "e.g.",
    "www.x.com", "https://a.b/c", "e-mail", "co-founder", "In summary,", "However,",
    "EU", "CEO", "BoE", "SEC", "NASA", "Barclays", "Lloyds", "HSBC", "Bank of England",
    "x", "\u00e9", "\u00dcnal", "stepped down", "took place", "set up", "paid",
    "larger than", "2 days", "hours", "left",
]

SHAPES = ["answer", "source", "both", "claims", "claims2", "sentence"]

ANSWER = "Barclays is older than Lloyds and was not founded in 1984[^1]. Both HSBC and Lloyds rose 5%[^1]."
SOURCE = "Barclays was founded in 1690. Lloyds was founded in 1765. HSBC rose 5% in Q3."

CONFIG = """max_record_bytes = 4194304
max_output_bytes = 16777216
[policy]
max_answer_bytes = 4000000
"""


def record(pattern, shape, size):
    unit = pattern + " "
    many = unit * (size // len(unit))
    claims = (pattern + "[^1]. ") * (size // (len(pattern) + 6))
    sentences = (pattern + ". ") * (size // (len(pattern) + 2))
    answer, sources = {
        "answer": (many + "[^1].", [SOURCE]),
        "source": (ANSWER, [many]),
        "both": (many + "[^1].", [many]),
        "claims": (claims, [sentences]),
        "claims2": (claims.replace("[^1]", "[^1][^2]"), [sentences, SOURCE + " " + sentences]),
        "sentence": (claims, [many]),
    }[shape]
    return {
        "request_id": "hostile",
        "answer": answer,
        "mode": "strict",
        "attempt": 0,
        "sources": [{"urn": f"urn:hostile:{k}", "payload": s} for k, s in enumerate(sources)],
    }


def cpu_seconds(binary, path, config, out):
    run = subprocess.run(
        [binary, "check", path, "--out", out, "--config", config, "--threads", "1"],
        capture_output=True, text=True,
    )
    found = re.search(r"CPU ([0-9.]+) s", run.stderr + run.stdout)
    if not found:
        raise SystemExit(f"no CPU time in the output of check {path}: {run.stderr.strip()}")
    return float(found.group(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("binary", help="the groundgate binary")
    ap.add_argument("--seed", type=int, default=5)
    ap.add_argument("--records", type=int, default=200)
    ap.add_argument("--bytes", type=int, default=300_000, help="size of the repeated text")
    ap.add_argument("--show", type=int, default=10, help="how many of the costliest to print")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        config = os.path.join(tmp, "limits.toml")
        with open(config, "w") as f:
            f.write(CONFIG)
        path = os.path.join(tmp, "record.jsonl")
        for i in range(args.records):
            pattern = " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 6)))
            shape = rng.choice(SHAPES)
            with open(path, "w") as f:
                f.write(json.dumps(record(pattern, shape, args.bytes)) + "\n")
            seconds = cpu_seconds(args.binary, path, config, os.path.join(tmp, "out"))
            results.append((seconds, i, shape, pattern))
    results.sort(reverse=True)
    print(f"{args.records} records of about {args.bytes} bytes, seed {args.seed}; CPU seconds of each check, costliest first:")
    for seconds, i, shape, pattern in results[: args.show]:
        print(f"{seconds:8.2f}  #{i:<4} {shape:<9} {pattern!r}")


if __name__ == "__main__":
    main()
