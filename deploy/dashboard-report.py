#!/usr/bin/env python3
"""Helpers of deploy/dashboard-check.sh; Python's standard library only.

  free-ports N                      N free loopback TCP ports, one a line
  fetch URL                         GET URL to stdout
  unxz SOURCE DEST                  decompress an .xz file (no xz tool needed), DEST executable
  wait-http URL SECONDS             until GET URL answers 200; exit 1 at the timeout
  wait-target PROMETHEUS SECONDS    until Prometheus has scraped matrixd (matrixd_build_info)
  report DASHBOARD PROMETHEUS START END OUT
                                    every panel query of the Grafana dashboard, as an instant
                                    query at END and a range query over [START, END] (Unix
                                    seconds), written to OUT; a summary on stdout; exit 1 when
                                    a panel that should have data has none

Grafana's variables are replaced before querying: $__rate_interval, $__interval and $__range by
--rate-interval (default 30s), and each template variable by its "All" value (a `=~` regex), so
the queries read every instance.
"""

import argparse
import json
import lzma
import os
import re
import shutil
import socket
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

# Metrics that only some backends export: without them a panel has no data by design, and the
# report says so instead of failing.
BACKEND_ONLY_METRICS = {
    "matrixd_device_memory_bytes": (
        "cuda",
        "the CPU backend has no device-memory pool (docs/operations.md: CUDA only)",
    ),
}


def free_ports(count):
    sockets = []
    try:
        for _ in range(count):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def get_json(url, timeout=10):
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return json.load(response)


def wait_http(url, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return True
        except (urllib.error.URLError, ConnectionError, OSError):
            pass
        time.sleep(0.2)
    return False


def query(prometheus, expr, at):
    url = prometheus + "/api/v1/query?" + urllib.parse.urlencode({"query": expr, "time": at})
    return get_json(url)


def query_range(prometheus, expr, start, end, step):
    url = prometheus + "/api/v1/query_range?" + urllib.parse.urlencode(
        {"query": expr, "start": start, "end": end, "step": step})
    return get_json(url)


def wait_target(prometheus, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            answer = query(prometheus, "matrixd_build_info", time.time())
            if answer.get("data", {}).get("result"):
                return True
        except (urllib.error.URLError, ConnectionError, OSError, ValueError):
            pass
        time.sleep(0.5)
    return False


def panels_of(dashboard):
    """(row title, panel) for every panel with targets, rows' nested panels included."""
    row = ""
    for panel in dashboard.get("panels", []):
        if panel.get("type") == "row":
            row = panel.get("title", "")
            for nested in panel.get("panels", []):
                yield row, nested
            continue
        yield row, panel


def substitute(expr, dashboard, rate_interval):
    for name in ("__rate_interval", "__interval", "__range"):
        expr = expr.replace("${" + name + "}", rate_interval).replace("$" + name, rate_interval)
    for variable in dashboard.get("templating", {}).get("list", []):
        name = variable.get("name", "")
        if not name or variable.get("type") == "datasource":
            continue
        every = variable.get("allValue") or ".*"
        for ref in ("${" + name + "}", "[[" + name + "]]", "$" + name):
            # An exact matcher on a variable becomes a regex matcher on its "All" value.
            expr = re.sub(r'(\w+)\s*=\s*"' + re.escape(ref) + '"', r'\1=~"' + every + '"', expr)
            expr = expr.replace(ref, every)
    return expr


def label_text(metric):
    labels = {k: v for k, v in metric.items() if k != "__name__"}
    name = metric.get("__name__", "")
    return name + "{" + ",".join(f'{k}="{v}"' for k, v in sorted(labels.items())) + "}"


def legend(fmt, metric):
    if not fmt:
        return label_text(metric)
    return re.sub(r"\{\{\s*(\w+)\s*\}\}", lambda m: metric.get(m.group(1), ""), fmt)


def number(text):
    try:
        return float(text)
    except ValueError:
        return float("nan")


def metrics_in(expr):
    return set(re.findall(r"\b(matrixd_[a-z0-9_]+?)(?:_bucket|_sum|_count)?\b", expr))


def report(args):
    with open(args.dashboard) as f:
        dashboard = json.load(f)
    start, end = float(args.start), float(args.end)
    step = max(1.0, round((end - start) / 120.0))
    backends = sorted({s["metric"].get("backend", "?") for s in
                       query(args.prometheus, "matrixd_build_info", end)["data"]["result"]})
    instances = sorted({s["metric"].get("instance", "?") for s in
                        query(args.prometheus, "matrixd_build_info", end)["data"]["result"]})
    lines = [
        f"dashboard: {args.dashboard} ({dashboard.get('title', '')})",
        f"prometheus: {args.prometheus}",
        f"load window: {time.strftime('%H:%M:%S', time.localtime(start))} to "
        f"{time.strftime('%H:%M:%S', time.localtime(end))} ({end - start:.0f} s); "
        f"instant queries at its end, range queries over it with step {step:.0f}s",
        f"$__rate_interval = {args.rate_interval}; template variables = their All value",
        f"backend(s): {', '.join(backends)}; variable instance: {', '.join(instances)}",
        "",
    ]
    summary = []
    missing = 0
    for row, panel in panels_of(dashboard):
        targets = [t for t in panel.get("targets", []) if t.get("expr")]
        if not targets:
            continue
        title = f"{row} / {panel.get('title', '?')}" if row else panel.get("title", "?")
        lines.append("=" * 100)
        lines.append(f"{title}  ({panel.get('type', '?')} panel)")
        panel_series = 0
        nonzero = False
        for target in targets:
            expr = substitute(target["expr"], dashboard, args.rate_interval)
            lines.append(f"  expr:  {target['expr']}")
            if expr != target["expr"]:
                lines.append(f"  query: {expr}")
            try:
                instant = query(args.prometheus, expr, end)["data"]["result"]
                ranged = query_range(args.prometheus, expr, start, end, step)["data"]["result"]
            except urllib.error.HTTPError as error:
                lines.append(f"  QUERY ERROR: {error.read().decode(errors='replace')}")
                instant, ranged = [], []
            lines.append(f"  instant at end: {len(instant)} series")
            for series in instant[: args.values]:
                value = number(series["value"][1])
                lines.append(f"    {legend(target.get('legendFormat'), series['metric'])}"
                             f"  =  {value:.6g}")
            if len(instant) > args.values:
                lines.append(f"    ... {len(instant) - args.values} more")
            lines.append(f"  range over the window: {len(ranged)} series")
            for index, series in enumerate(ranged):
                values = [number(v) for _, v in series["values"]]
                finite = [v for v in values if v == v]
                nonzero = nonzero or any(v != 0 for v in finite)
                if index >= args.values:
                    continue
                lines.append(
                    f"    {legend(target.get('legendFormat'), series['metric'])}: "
                    f"{len(values)} points"
                    + (f", min {min(finite):.6g}, max {max(finite):.6g}, last {finite[-1]:.6g}"
                       if finite else ", all NaN"))
            if len(ranged) > args.values:
                lines.append(f"    ... {len(ranged) - args.values} more")
            panel_series += len(ranged)
        used = {m for t in targets for m in metrics_in(t["expr"])}
        expected_absent = [why for metric, (backend, why) in BACKEND_ONLY_METRICS.items()
                           if metric in used and backend not in backends]
        if panel_series > 0:
            verdict, note = "DATA", "" if nonzero else "every value 0 or NaN"
        elif expected_absent:
            verdict, note = "NO DATA", "expected: " + "; ".join(expected_absent)
        else:
            verdict, note = "NO DATA", ""
            missing += 1
        lines.append(f"  => {verdict}" + (f" ({note})" if note else ""))
        summary.append(f"{verdict:8} {panel_series:4d} series  {title}"
                       + (f"  [{note}]" if note else ""))
    header = ["panel summary (series over the load window):"] + ["  " + s for s in summary] + [""]
    text = "\n".join(lines[:6] + header + lines[6:]) + "\n"
    with open(args.out, "w") as f:
        f.write(text)
    print("\n".join(header))
    if missing:
        print(f"{missing} panel(s) without data that should have some; see {args.out}")
    return 1 if missing else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    p = commands.add_parser("free-ports")
    p.add_argument("count", type=int)
    p = commands.add_parser("fetch")
    p.add_argument("url")
    p = commands.add_parser("unxz")
    p.add_argument("source")
    p.add_argument("dest")
    p = commands.add_parser("wait-http")
    p.add_argument("url")
    p.add_argument("seconds", type=float)
    p = commands.add_parser("wait-target")
    p.add_argument("prometheus")
    p.add_argument("seconds", type=float)
    p = commands.add_parser("report")
    p.add_argument("dashboard")
    p.add_argument("prometheus")
    p.add_argument("start")
    p.add_argument("end")
    p.add_argument("out")
    p.add_argument("--rate-interval", default="30s")
    p.add_argument("--values", type=int, default=6, help="series to print per query")
    args = parser.parse_args()
    if args.command == "free-ports":
        print("\n".join(str(p) for p in free_ports(args.count)))
        return 0
    if args.command == "fetch":
        with urllib.request.urlopen(args.url, timeout=30) as response:
            sys.stdout.write(response.read().decode())
        return 0
    if args.command == "unxz":
        with lzma.open(args.source) as source, open(args.dest, "wb") as dest:
            shutil.copyfileobj(source, dest)
        os.chmod(args.dest, 0o755)
        return 0
    if args.command == "wait-http":
        return 0 if wait_http(args.url, args.seconds) else 1
    if args.command == "wait-target":
        return 0 if wait_target(args.prometheus, args.seconds) else 1
    return report(args)


if __name__ == "__main__":
    sys.exit(main())
