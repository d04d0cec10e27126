"""Simulate a per-question answer layout from existing eval rows (no LM call).

"both" (question before and after the context) for questions that end with two options
("... A or B?"), "last" otherwise: each question's row is taken from the column measured with
that layout. Run from the repository root: python docs/results/hotpotqa-dev-reader-qboth/layout_per_question.py
"""
import json, re
from ragnet.eval.stats import paired_bootstrap, sign_test
OPT = re.compile(r"\s+or\s+[^,?]+\?\s*$")
def load(f, s):
    return {r["id"]: r for r in map(json.loads, open(f + "/results.jsonl")) if r["strategy"] == s}
for name, folder_b, sb, folder_l, sl in (
    ("hotpotqa", "docs/results/hotpotqa-dev-reader-qboth", "oneshot:sentences-qboth@1000", "docs/results/hotpotqa-dev-reader-qlast", "oneshot:sentences-qlast@1000"),
    ("2wiki", "docs/results/2wiki-dev-reader-qboth", "oneshot:sentences-qboth@1000", "docs/results/2wiki-dev-reader-qlast", "oneshot:sentences@1000")):
    qb, ql = load(folder_b, sb), load(folder_l, sl)
    basic = load(folder_l, "basic")
    ids = list(ql)
    two = {i for i in ids if OPT.search(ql[i]["question"])}
    pol = {i: (qb[i] if i in two else ql[i]) for i in ids}
    f = lambda d: 100 * sum(d[i]["f1"] for i in ids) / len(ids)
    e = lambda d: 100 * sum(d[i]["em"] for i in ids) / len(ids)
    print(name, len(ids), "two-option", len(two), "F1 last %.1f both %.1f policy %.1f basic %.1f" % (f(ql), f(qb), f(pol), f(basic)), "EM policy %.1f" % e(pol))
    for other, d in (("basic", basic), ("last", ql), ("both", qb)):
        w = sum(pol[i]["em"] > d[i]["em"] for i in ids); l = sum(pol[i]["em"] < d[i]["em"] for i in ids)
        print("  policy vs", other, paired_bootstrap([pol[i]["f1"] - d[i]["f1"] for i in ids]), "EM w/l", w, l, round(sign_test(w, l), 4))
