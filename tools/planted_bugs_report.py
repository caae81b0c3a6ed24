#!/usr/bin/env python
"""Run the planted-bug corpus (tests/planted_bugs.py) on the emulator under every policy and print
how the reports fare, per expected report class and per kind of slip:

  named      the run raised one of the bug's expected classes
  culprit    ... and the report's first line names the defective kernel line (within two lines, or
             between two lines it names at most 12 apart: the operations a missing barrier should order)
  silent     no report and a right result
  wrong      no report, and numpy finds the result wrong
  other      a report of a class not expected for the bug

and the correct twins (each chapter's unedited kernel at the same shapes, configurations and
policies): any report there is a false positive.

    PYTHONPATH=$PWD python tools/planted_bugs_report.py [--json out.json] [--only NAME ...] [--show]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import defaultdict

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from tests.planted_bugs import BUGS, POLICIES, run  # noqa: E402

COLS = ("runs", "named", "culprit", "silent", "wrong", "other")


def tally(rows, key):
    table = defaultdict(lambda: dict.fromkeys(COLS, 0))
    for r in rows:
        for k in (key(r), "all"):
            t = table[k]
            t["runs"] += 1
            if r["kind"] in r["expect"]:
                t["named"] += 1
                t["culprit"] += r["culprit"]
            elif r["kind"] == "ok":
                t["silent"] += 1
            elif r["kind"] == "wrong":
                t["wrong"] += 1
            else:
                t["other"] += 1
    return table


def print_table(title, table):
    print(f"\n{title:<22}" + "".join(f"{c:>9}" for c in COLS))
    for k in sorted(table, key=lambda k: (k == "all", k)):
        print(f"{k:<22}" + "".join(f"{table[k][c]:>9}" for c in COLS))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", help="write every run's outcome here")
    ap.add_argument("--only", nargs="*", help="run only these bugs (names)")
    ap.add_argument("--show", action="store_true", help="print each run's first paragraph")
    ap.add_argument("--no-twins", action="store_true", help="skip the correct twins")
    args = ap.parse_args(argv)
    bugs = [b for b in BUGS if not args.only or b.name in args.only]
    rows, t0 = [], time.time()
    for b in bugs:
        for policy, seed in POLICIES:
            o = run(b, policy, seed)
            rows.append(dict(bug=b.name, chapter=b.chapter, category=b.category, expect=list(b.expect),
                             policy=f"{policy}/{seed}", kind=o.kind, culprit=bool(o.culprit_named),
                             lines=list(o.culprit_lines), first=o.first_paragraph[:2000]))
            mark = "named" if o.kind in b.expect else "MISS"
            print(f"{b.name:<36} {policy}/{seed:<3} {o.kind:<20} {mark:<6} culprit={'yes' if o.culprit_named else 'no'}",
                  flush=True)
            if args.show:
                print("    " + o.first_paragraph[:1500].replace("\n", "\n    "))
    twins = []
    if not args.no_twins:
        seen = set()
        for b in bugs:
            key = (b.chapter, tuple(sorted(b.kwargs.items())))
            if key in seen:
                continue
            seen.add(key)
            for policy, seed in POLICIES:
                o = run(b, policy, seed, twin=True)
                twins.append(dict(chapter=b.chapter, config=b.kwargs, policy=f"{policy}/{seed}", kind=o.kind,
                                  first=o.first_paragraph[:2000]))
                if o.kind != "ok":
                    print(f"FALSE POSITIVE: chapter {b.chapter} {b.kwargs} {policy}/{seed}: {o.kind}: "
                          f"{o.first_paragraph[:400]}", flush=True)
    print_table("expected class", tally(rows, lambda r: r["expect"][0]))
    print_table("kind of slip", tally(rows, lambda r: r["category"]))
    print_table("chapter", tally(rows, lambda r: f"chapter {r['chapter']}"))
    # the defect in the chapter's kernel file, or in a shared helper (a culprit line given as (file, line))
    print_table("defect in", tally(rows, lambda r: "helper" if any(isinstance(c, (list, tuple)) for c in r["lines"])
                                   else "kernel file"))
    classes = defaultdict(set)
    for r in rows:
        classes[r["bug"]].add(r["kind"])
    same = sum(len(k) == 1 for k in classes.values())
    print(f"\nthe same first-line class under every policy: {same} of {len(classes)} bugs; differing: "
          + ", ".join(f"{b} ({'/'.join(sorted(k))})" for b, k in sorted(classes.items()) if len(k) > 1))
    named = sum(r["kind"] in r["expect"] for r in rows)
    reports = sum(r["kind"] in r["expect"] and r["kind"] not in ("ok", "wrong") for r in rows)
    culprit = sum(r["culprit"] for r in rows if r["kind"] in r["expect"])
    fp = sum(t["kind"] != "ok" for t in twins)
    print(f"\n{len(bugs)} bugs x {len(POLICIES)} policies = {len(rows)} runs: {named} named ({reports} by an emulator "
          f"report, the rest by numpy alone); {culprit} of those reports ({100 * culprit / max(reports, 1):.0f}%) name "
          f"the culprit line in their first line; correct twins: {fp} false positives in {len(twins)} runs; "
          f"{time.time() - t0:.0f} s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(runs=rows, twins=twins), f, indent=1)


if __name__ == "__main__":
    main()
