#!/usr/bin/env python3
"""The conformance runner: every scenario x every ordered combination of agents (one per role) x
every transport the scenario names. Prints the matrix, writes a JSON and a JUnit report, and
exits non-zero when any cell fails (or a known failure passes). Python 3.11 standard library only.

    python3 conformance/runner/runner.py [--scenario SUBSTR] [--agents rust,python] [--transport quic]

conformance/README.md documents the agent protocol and the scenario format.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import sys
import tempfile
import threading
import time
import xml.etree.ElementTree as ET
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from agents import AgentSpec, allowed, load_registry  # noqa: E402
from cells import Cell, run_cell  # noqa: E402
from scenarios import ScenarioError, load_all  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
CONFORMANCE = os.path.dirname(HERE)
ROOT = os.path.dirname(CONFORMANCE)


def known_failures(path: str) -> list[dict]:
    if not path or not os.path.exists(path):
        return []
    with open(path) as f:
        data = json.load(f)
    for k in data.get("known_failures", []):
        if not k.get("reason"):
            raise ValueError(f"{path}: a known failure without a reason: {k}")
    return data.get("known_failures", [])


def known_reason(cell: Cell, known: list[dict]) -> str | None:
    for k in known:
        if k["scenario"] not in ("*", cell.scenario.name):
            continue
        if k.get("agents", "*") not in ("*", cell.combo):
            continue
        if k.get("transport", "*") not in ("*", cell.transport):
            continue
        return k["reason"]
    return None


def plan(scenarios, specs: list[AgentSpec], unavailable: dict[str, str], transports_filter):
    cells = []
    for sc in scenarios:
        for transport in sc.transports:
            if transports_filter and transport not in transports_filter and transport != "none":
                continue
            for combo in combos(specs, len(sc.roles), transport):
                cell = Cell(sc, combo, transport, len(cells))
                missing = [unavailable[a] for a in sorted(set(combo)) if a in unavailable]
                if missing:
                    cell.status, cell.reason = "skip", "; ".join(missing)
                elif transport == "inproc" and len(set(combo)) > 1:
                    cell.status = "skip"
                    cell.reason = ("inproc addresses cannot cross processes: roles of different "
                                   "languages cannot share one")
                cells.append(cell)
    return cells


def combos(specs: list[AgentSpec], n_roles: int, transport: str | None = None) -> list[tuple[str, ...]]:
    """The combinations of agents (one per role) that are cells on `transport` (None: on any):
    every ordered one, less those an agent's `pairs_with` leaves out."""
    by_name = {s.name: s for s in specs}
    names = [s.name for s in specs]
    every = ["quic", "unix", "inproc", "none"] if transport is None else [transport]
    return [c for c in itertools.product(names, repeat=n_roles)
            if any(allowed(c, t, by_name) for t in every)]


def print_matrix(cells: list[Cell], specs: list[AgentSpec], out=None) -> None:
    out = out or sys.stdout
    mark = {"pass": "PASS", "fail": "FAIL", "skip": "skip", "xfail": "xfail", "xpass": "XPASS"}
    by_roles: dict[int, list[Cell]] = {}
    for c in cells:
        by_roles.setdefault(len(c.agents), []).append(c)
    for n_roles in sorted(by_roles):
        group = by_roles[n_roles]
        columns = [">".join(c) for c in combos(specs, n_roles)]
        scen_w = max(len("scenario"), *(len(c.scenario.name) for c in group))
        col_w = max(5, *(len(c) for c in columns))
        roles_note = ">".join(group[0].scenario.roles) if n_roles > 1 else group[0].scenario.roles[0]
        print(f"\n{n_roles} role{'s' if n_roles > 1 else ''} "
              f"(columns: the language of each role, in the scenario's role order, e.g. {roles_note})",
              file=out)
        print(f"{'scenario':<{scen_w}}  {'transport':<9}  " + "  ".join(f"{c:<{col_w}}" for c in columns),
              file=out)
        rows: dict[tuple[str, str], dict[str, Cell]] = {}
        for c in group:
            rows.setdefault((c.scenario.name, c.transport), {})[c.combo] = c
        for (scen, transport), row in rows.items():
            marks = [mark[row[c].status] if c in row else "" for c in columns]
            print(f"{scen:<{scen_w}}  {transport:<9}  " + "  ".join(f"{m:<{col_w}}" for m in marks),
                  file=out)


def summarize(cells: list[Cell], out=None) -> Counter:
    out = out or sys.stdout
    counts = Counter(c.status for c in cells)
    skips = Counter(c.reason for c in cells if c.status == "skip")
    if skips:
        print("\nskipped cells, by reason:", file=out)
        for reason, n in skips.most_common():
            print(f"  {n:4d} x {reason}", file=out)
    xfails = [c for c in cells if c.status == "xfail"]
    if xfails:
        print("\nknown failures (xfail), each with its stated reason:", file=out)
        for c in xfails:
            print(f"  {c.id}: {c.known}", file=out)
    bad = [c for c in cells if c.status in ("fail", "xpass")]
    if bad:
        print("\nFAILED cells:", file=out)
        for c in bad:
            print(f"  {c.id}: {c.reason}", file=out)
            for log in c.logs:
                print(f"      agent log: {log}", file=out)
    total = len(cells)
    print(f"\ncells: {total} ({counts['pass']} passed, {counts['fail']} failed, {counts['skip']} skipped, "
          f"{counts['xfail']} known failures, {counts['xpass']} unexpected passes)", file=out)
    # The plain closing line CI reads.
    print(f"conformance: {counts['pass']} passed, {counts['fail'] + counts['xpass']} failed, "
          f"{counts['skip'] + counts['xfail']} skipped", file=out)
    return counts


def write_reports(cells: list[Cell], counts: Counter, json_path: str, junit_path: str,
                  agents: list[dict], elapsed: float) -> None:
    report = {
        "summary": {"cells": len(cells), **{k: counts.get(k, 0) for k in ("pass", "fail", "skip", "xfail", "xpass")},
                    "seconds": round(elapsed, 2)},
        "agents": agents,
        "cells": [{
            "scenario": c.scenario.name,
            "roles": c.scenario.roles,
            "agents": list(c.agents),
            "transport": c.transport,
            "status": c.status,
            "reason": c.reason,
            "known_failure": c.known,
            "seconds": round(c.duration, 3),
            "logs": c.logs,
        } for c in cells],
    }
    if json_path:
        with open(json_path, "w") as f:
            json.dump(report, f, indent=1)
            f.write("\n")
    if junit_path:
        suite = ET.Element("testsuite", name="weida-conformance", tests=str(len(cells)),
                           failures=str(counts["fail"] + counts["xpass"]),
                           skipped=str(counts["skip"]), time=f"{elapsed:.2f}")
        for c in cells:
            tc = ET.SubElement(suite, "testcase", classname=f"conformance.{c.scenario.name}",
                               name=f"{c.combo}@{c.transport}", time=f"{c.duration:.3f}")
            if c.status == "skip":
                ET.SubElement(tc, "skipped", message=c.reason)
            elif c.status == "xfail":
                ET.SubElement(tc, "skipped", message=f"known failure: {c.known}")
            elif c.status in ("fail", "xpass"):
                ET.SubElement(tc, "failure", message=c.reason[:500]).text = c.reason
        root = ET.Element("testsuites")
        root.append(suite)
        ET.indent(root)
        ET.ElementTree(root).write(junit_path, encoding="utf-8", xml_declaration=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--registry", default=os.path.join(CONFORMANCE, "agents.json"))
    ap.add_argument("--scenarios", default=os.path.join(CONFORMANCE, "scenarios"))
    ap.add_argument("--schema", default=os.path.join(CONFORMANCE, "schema", "scenario.schema.json"))
    ap.add_argument("--known-failures", default=os.path.join(CONFORMANCE, "known_failures.json"))
    ap.add_argument("--report", default=os.path.join(CONFORMANCE, "report.json"), help="JSON report ('' for none)")
    ap.add_argument("--junit", default=os.path.join(CONFORMANCE, "report.xml"), help="JUnit XML report ('' for none)")
    ap.add_argument("--logs", default="", help="where agent logs go (default: a temporary directory)")
    ap.add_argument("--scenario", action="append", default=[], help="only scenarios whose name contains this (repeatable)")
    ap.add_argument("--agents", default="", help="only these agents (comma-separated registry names)")
    ap.add_argument("--transport", action="append", default=[], help="only this transport (repeatable)")
    ap.add_argument("--step-timeout", type=float, default=20.0, help="seconds each step may take (default 20)")
    ap.add_argument("--root", default=ROOT, help="where agent commands run (the repository root)")
    ap.add_argument("--check", action="store_true", help="only check the scenarios and the registry")
    ap.add_argument("--quiet", action="store_true", help="no line per cell as it runs")
    ap.add_argument("--jobs", type=int, default=int(os.environ.get("WEIDA_CONFORMANCE_JOBS", "1")),
                    help="cells run at once (default 1, or $WEIDA_CONFORMANCE_JOBS): each cell is "
                         "its own agent processes, addresses and temporary folder")
    ap.add_argument("--lane-max", type=int, default=None,
                    help="give every runtime op this lane_max_message unless the scenario sets one "
                         "(0: message lanes off; default: each agent's default, lanes on)")
    a = ap.parse_args(argv)

    try:
        scenarios = load_all(a.scenarios, a.schema)
    except ScenarioError as e:
        print(e, file=sys.stderr)
        return 2
    if a.lane_max is not None:
        for s in scenarios:
            for step in s.all_steps:
                if step.get("op") == "runtime":
                    step["args"].setdefault("lane_max_message", a.lane_max)
    if a.scenario:
        # A full name selects that scenario alone; anything else, every name containing it.
        scenarios = [s for s in scenarios
                     if any(p == s.name or (p not in {x.name for x in scenarios} and p in s.name)
                            for p in a.scenario)]
    specs = load_registry(a.registry)
    if a.agents:
        wanted = a.agents.split(",")
        specs = [s for s in specs if s.name in wanted]
    unavailable = {s.name: why for s in specs if (why := s.unavailable(a.root))}
    required_missing = [unavailable[s.name] for s in specs if s.required and s.name in unavailable]
    if required_missing:
        print("a required agent is missing (build it first):\n  " + "\n  ".join(required_missing), file=sys.stderr)
        return 2
    try:
        known = known_failures(a.known_failures)
    except ValueError as e:
        print(e, file=sys.stderr)
        return 2
    cells = plan(scenarios, specs, unavailable, a.transport)
    if a.check:
        print(f"{len(scenarios)} scenarios, {len(specs)} agents, {len(cells)} cells: all valid")
        return 0

    log_dir = a.logs or tempfile.mkdtemp(prefix="weida-conformance-logs-")
    os.makedirs(log_dir, exist_ok=True)
    by_name = {s.name: s for s in specs}
    started = time.monotonic()
    to_run = [c for c in cells if c.status != "skip"]
    print(f"conformance: {len(scenarios)} scenarios, agents {[s.name for s in specs]}, "
          f"{len(cells)} cells ({len(to_run)} to run); agent logs in {log_dir}")
    printing = threading.Lock()

    def one(c: Cell) -> None:
        c.known = known_reason(c, known)
        t0 = time.monotonic()
        status, why = run_cell(c, by_name, a.root, log_dir, a.step_timeout)
        passed = status == "pass"
        c.duration = time.monotonic() - t0
        if status == "skip":
            c.status, c.reason = "skip", why  # an op the agent's binding does not export
        elif c.known:
            c.status = "xpass" if passed else "xfail"
            c.reason = (f"passed, but is listed as a known failure ({c.known}): remove it from "
                        "known_failures.json") if passed else why
        else:
            c.status, c.reason = ("pass", "") if passed else ("fail", why)
        if c.status in ("pass", "xfail", "skip"):
            c.logs = []  # kept only for the cells that fail the run
        if not a.quiet:
            with printing:  # a line per cell, whole, whichever worker finishes it
                print(f"  {c.status.upper():5} {c.id} ({c.duration:.2f} s)"
                      + (f": {c.reason}" if c.status in ("fail", "xpass", "skip") else ""), flush=True)

    if a.jobs <= 1:
        for c in to_run:
            one(c)
    else:
        # Cells share nothing but the machine: each has its own agent processes, its own
        # temporary folder (AF_UNIX paths), in-process names numbered by cell, and QUIC ports
        # the kernel picks. The report keeps the plan's order whatever order they finish in.
        with ThreadPoolExecutor(max_workers=a.jobs) as pool:
            for _ in pool.map(one, to_run):
                pass
    elapsed = time.monotonic() - started
    print_matrix(cells, specs)
    counts = summarize(cells)
    agents = [{"name": s.name, "language": s.language, "command": s.command,
               "available": s.name not in unavailable, "reason": unavailable.get(s.name, "")} for s in specs]
    write_reports(cells, counts, a.report, a.junit, agents, elapsed)
    if a.report or a.junit:
        print(f"reports: {a.report or '-'} {a.junit or '-'}")
    if not a.logs and all(c.status not in ("fail", "xpass") for c in cells):
        shutil.rmtree(log_dir, ignore_errors=True)  # nothing to point at
    return 1 if counts["fail"] or counts["xpass"] else 0


if __name__ == "__main__":
    sys.exit(main())
