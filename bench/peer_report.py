"""The output of bench/peers.py: the medians table (agents as columns) and issue 12's targets for coder-agent.

``targets`` checks coder-agent's medians against the best peer measured in the same run; ``print_report`` prints
the header (versions, load), the skipped agents, the table, the targets and the failures. Stdlib only.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping
from typing import Any

Samples = list[dict[str, Any]]

TARGET_TAIL_MS = 20.0
TARGET_RSS_MIB = 200.0
TARGET_IDLE_TRIPS = 3
ROUND_TRIP_PEER = "kimi"  # issue 12: per round trip no slower than Kimi's in the same run


def values(samples: Samples, key: str) -> list[float]:
    """Every value of `key` over the runs; list-valued figures (several per run) are pooled."""
    out: list[float] = []
    for sample in samples:
        value = sample.get(key)
        if isinstance(value, list):
            out += value
        elif value is not None:
            out.append(float(value))
    return out


def median(samples: Samples, key: str) -> float | None:
    found = values(samples, key)
    return statistics.median(found) if found else None


def client_round_trip(samples: Samples) -> float | None:
    tools, texts = median(samples, "tool_prompts"), median(samples, "text_prompts")
    return None if tools is None or texts is None else tools - texts


def _number(value: float, unit: str) -> str:
    if unit == "ms":
        value *= 1000
        return f"{value:.0f}" if abs(value) >= 100 else f"{value:.1f}"
    if unit == "MiB" or unit == "":
        return f"{value:.0f}"
    return f"{value:.2f}"


def cell(samples: Samples, key: str, unit: str) -> str:
    found = values(samples, key)
    if not found:
        return "-"
    text = _number(statistics.median(found), unit)
    if len(found) > 1 and unit:
        text += f" [{_number(min(found), unit)}-{_number(max(found), unit)}]"
    return text


def _count(samples: Samples, key: str) -> str:
    found = values(samples, key)
    return f"{sum(found):.0f}/{len(found)}" if found else "-"


def rows(idle: float) -> list[tuple[str, Callable[[Samples], str]]]:
    def of(key: str, unit: str) -> Callable[[Samples], str]:
        return lambda samples: cell(samples, key, unit)

    def round_trip(samples: Samples) -> str:
        value = client_round_trip(samples)
        return "-" if value is None else _number(value, "ms")

    return [
        ("spawn -> ready (initialize+session/new), s", of("ready", "s")),
        ("sent at once: prompt -> model's first chunk, ms", of("at_once_chunk", "ms")),
        ("  spawn -> model's first chunk, s", of("at_once_spawn_chunk", "s")),
        ("  prompt -> model request (server), ms", of("at_once_request", "ms")),
        ("  prompt -> its own note first (apart), ms", of("at_once_note", "ms")),
        (f"after {idle:g} s idle: prompt -> model's first chunk, ms", of("idle_chunk", "ms")),
        ("  prompt -> model request (server), ms", of("idle_request", "ms")),
        ("  prompt -> its own note first (apart), ms", of("idle_note", "ms")),
        ("round trip, server (model->tool->model), ms", of("round_trips", "ms")),
        ("round trip, client (tool - text prompt), ms", round_trip),
        ("reply end -> response, warm text, ms", of("reply_ends", "ms")),
        ("reply end -> response, first prompt, ms", of("first_reply_end", "ms")),
        ("RSS after a tool turn (tree), MiB", of("rss", "MiB")),
        ("  processes in the tree", of("processes", "")),
        ("shutdown after stdin EOF, ms", of("shutdown", "ms")),
        ("  exited by itself (at once runs)", lambda samples: _count(samples, "exited")),
        ("  children left behind (total)", lambda samples: f"{sum(values(samples, 'left_behind')):.0f}"),
        ("CPU time user+sys (tree, at once run), s", of("cpu", "s")),
        ("wall time spawn -> exit (at once run), s", of("wall", "s")),
        ("model requests per at-once run", of("requests", "")),
        ("client requests answered per run", of("asked", "")),
    ]


def _best_peer(samples: Mapping[str, Samples], key: str, agents: list[str]) -> tuple[str, float] | None:
    found = [(agent, m) for agent in agents if agent != "coder" and (m := median(samples.get(agent, []), key))]
    return min(found, key=lambda pair: pair[1]) if found else None


def targets(report: dict[str, Any], agents: list[str]) -> list[dict[str, Any]]:
    """Issue 12's targets for coder-agent: each with its figures and ok (None when a figure is missing)."""
    samples: dict[str, Samples] = report["samples"]
    ours = samples.get("coder", [])
    out: list[dict[str, Any]] = []

    def add(name: str, mine: float | None, limit: float | None, against: str) -> None:
        ok = None if mine is None or limit is None else mine <= limit
        out.append({"target": name, "coder": mine, "limit": limit, "against": against, "ok": ok})

    def against_best(name: str, key: str, strict: bool = False) -> None:
        best = _best_peer(samples, key, agents)
        mine = median(ours, key)
        limit = None if best is None else best[1]
        add(name, mine, limit, "no peer measured" if best is None else f"best peer: {best[0]}")
        if strict and out[-1]["ok"] and mine == limit:
            out[-1]["ok"] = False

    against_best("startup lead: spawn -> ready below every peer's", "ready", strict=True)
    against_best("sent at once: spawn -> the model's first chunk <= best peer's", "at_once_spawn_chunk")
    trip = median(ours, "round_trips")
    add(
        f"after idle: prompt -> first chunk <= {TARGET_IDLE_TRIPS} warm round trips",
        median(ours, "idle_chunk"),
        None if trip is None else TARGET_IDLE_TRIPS * trip,
        "coder-agent's own round trip (server)",
    )
    add(f"reply end -> response <= {TARGET_TAIL_MS:g} ms", median(ours, "reply_ends"), TARGET_TAIL_MS / 1000, "")
    peer = ROUND_TRIP_PEER if samples.get(ROUND_TRIP_PEER) else None
    if peer:
        add("round trip (server) <= Kimi's", trip, median(samples[peer], "round_trips"), "kimi")
    else:
        against_best("round trip (server) <= best peer's (Kimi not measured)", "round_trips")
    rss = median(ours, "rss")
    add(f"RSS after a tool turn <= {TARGET_RSS_MIB:g} MiB", rss, TARGET_RSS_MIB, "")
    return out if ours else []


def _target_figure(value: float | None, name: str) -> str:
    if value is None:
        return "-"
    return f"{value:.0f} MiB" if "RSS" in name else f"{value * 1000:.0f} ms"


def print_table(report: dict[str, Any], columns: list[str], titles: Mapping[str, Any]) -> None:
    samples = report["samples"]
    table = [["median [min-max]", *(titles[key].title for key in columns)]]
    table += [[label, *(render(samples.get(key, [])) for key in columns)] for label, render in rows(report["idle"])]
    table.append(["counted runs", *(str(len(samples.get(key, []))) for key in columns)])
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    for number, row in enumerate(table):
        print("  ".join(text.ljust(widths[i]) if i == 0 else text.rjust(widths[i]) for i, text in enumerate(row)))
        if number == 0:
            print("  ".join("-" * w for w in widths))


def print_report(report: dict[str, Any], agents: list[str], titles: Mapping[str, Any]) -> None:
    print(
        f"bench/peers.py: {report['runs']} runs + 1 warm-up, idle {report['idle']:g} s, {report['trips']} "
        f"text+tool pairs per run (first uncounted); {report['cpus']} CPUs; load average before "
        f"{report['load_before']}, after {report['load_after']}"
    )
    columns = [key for key in agents if key not in report["skipped"]]
    for key in columns:
        tool = report.get("read_tools", {}).get(key, "-")
        print(f"  {titles[key].title}: {report['versions'].get(key, '-')}; read tool: {tool}")
    for key, why in report["skipped"].items():
        print(f"  SKIPPED {titles[key].title}: {why}")
    print()
    if columns:
        print_table(report, columns, titles)
    else:
        print("no agent ran")
    if report["targets"]:
        print("\ntargets (issue 12), coder-agent's medians:")
        for t in report["targets"]:
            verdict = {True: "PASS", False: "FAIL", None: "n/a "}[t["ok"]]
            against = f" ({t['against']})" if t["against"] else ""
            mine, limit = _target_figure(t["coder"], t["target"]), _target_figure(t["limit"], t["target"])
            print(f"  {verdict}  {t['target']}: {mine} vs {limit}{against}")
    if report["failures"]:
        print(f"\nFAILURES ({sum(len(v) for v in report['failures'].values())}):")
        for key, found in report["failures"].items():
            for failure in found:
                print(f"  - {titles[key].title}: {failure}")
    print(
        "\nFigures are indicative: on a shared 2-core machine, CPU contention from other work inflates them "
        "unevenly (see the load averages); compare agents within one run, not across runs."
    )
