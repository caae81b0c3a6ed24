#!/usr/bin/env python
"""tools/planted_bugs_report.py on the fresh planted-bug set (tests/planted_bugs_fresh.py, issue 27
item 5): its BUGS, its three policies (lazy, eager, random seed 0) and its run (which also edits
pipeline.py). The runs are computed first, ``--jobs`` at a time, then handed to the report's tables
unchanged. A run that raises something other than an emulator report is recorded as class
``crash:<type>`` (counted as "other") instead of ending the whole measurement.

    PYTHONPATH=$PWD nice -n 19 python tools/fresh_bugs_report.py [--jobs 2] [--json out.json] [--show]
        [--no-twins | --twins-only] [--only NAME ...]
"""
from __future__ import annotations

import json
import os
import signal
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tools"))

import planted_bugs_report as report  # noqa: E402

from tests import planted_bugs_fresh as fresh  # noqa: E402
from tests.planted_bugs import Outcome  # noqa: E402


def _twin_key(b):
    return ("twin", b.chapter, tuple(sorted(b.kwargs.items())))


RUN_LIMIT_S = 300  # one run longer than this is recorded as crash:TimeoutError


def _alarm(*_):
    raise TimeoutError(f"the run took longer than {RUN_LIMIT_S} s")


def _one(task):
    name, policy, seed, twin = task
    b = fresh.bug(name)
    signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(RUN_LIMIT_S)
    try:
        o = fresh.run(b, policy, seed, twin=twin)
    except Exception as exc:  # noqa: BLE001 (a harness or kernel crash is a result too)
        o = Outcome(f"crash:{type(exc).__name__}", f"{type(exc).__name__}: {exc}", False, ())
    finally:
        signal.alarm(0)
    print(f"  done {name} {policy}/{seed}{' (twin)' if twin else ''}: {o.kind}", file=sys.stderr, flush=True)
    return (_twin_key(b) if twin else name, policy, seed), o


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    jobs = 2
    if "--jobs" in argv:
        i = argv.index("--jobs")
        jobs = int(argv[i + 1])
        del argv[i:i + 2]
    only = argv[argv.index("--only") + 1:] if "--only" in argv else None
    bugs = [b for b in fresh.BUGS if not only or b.name in only]
    twins_only = "--twins-only" in argv
    tasks = [] if twins_only else [(b.name, p, s, False) for b in bugs for p, s in fresh.POLICIES]
    if "--no-twins" not in argv:
        seen = {}
        for b in bugs:
            seen.setdefault(_twin_key(b), b.name)
        tasks += [(name, p, s, True) for name in seen.values() for p, s in fresh.POLICIES]
    with ProcessPoolExecutor(jobs) as pool:
        done = dict(pool.map(_one, tasks))
    if twins_only:  # the correct twins alone (each chapter's unedited kernel): any report is a false positive
        fp = [(k, o) for k, o in done.items() if o.kind != "ok"]
        for (key, policy, seed), o in fp:
            print(f"FALSE POSITIVE: chapter {key[1]} {dict(key[2])} {policy}/{seed}: {o.kind}: {o.first_paragraph[:400]}")
        print(f"correct twins: {len(fp)} false positives in {len(done)} runs")
        return
    report.BUGS, report.POLICIES = fresh.BUGS, fresh.POLICIES
    report.run = lambda b, policy, seed, twin=False: done[(_twin_key(b) if twin else b.name, policy, seed)]
    if "--json" not in argv:
        argv += ["--json", os.path.join(tempfile.mkdtemp(), "fresh.json")]
    report.main(argv)
    with open(argv[argv.index("--json") + 1]) as f:
        rows = json.load(f)["runs"]
    # the helpers one by one (a culprit given as (file, line)), and every report that missed its culprit
    report.print_table("defect in (file)", report.tally(
        rows, lambda r: next((c[0] for c in r["lines"] if isinstance(c, list)), "kernel file")))
    print("\nreports of an expected class whose first line does not name the culprit:")
    for r in rows:
        if r["kind"] in r["expect"] and r["kind"] not in ("ok", "wrong") and not r["culprit"]:
            print(f"  {r['bug']} {r['policy']} (culprit {r['lines']}): {r['first'][:300]}")
    print("\nruns of another class, silent or wrong where a report was expected:")
    for r in rows:
        if r["kind"] not in r["expect"]:
            print(f"  {r['bug']} {r['policy']}: {r['kind']} (expected {'/'.join(r['expect'])}): {r['first'][:300]}")


if __name__ == "__main__":
    main()
