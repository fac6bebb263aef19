"""The durable flow card: what stays in the Pi session's transcript after a flow call settled.

The shim appends it as a custom entry (``pi.appendEntry``: kept in the session file, never
sent to the model, drawn again when the session is resumed) and draws its ``lines``; the other
fields are the same facts as data. The wording follows the live row (docs/flows.md): a settled
fan-out is headed by its outcome (``3 ok``, ``2 failed``), never by ``3/3``, which would read as
a success total; a single-run flow shows neither.
"""

from __future__ import annotations

from typing import Any

from application.flows.flow_report import FlowReport, error_text

FLOW_CARD_TYPE = "pi-squad-flow-card"
CARD_VERSION = 1
_MARKS = {"completed": "✓", "failed": "✗", "skipped": "–"}


def outcome(results: list[dict[str, Any]]) -> str | None:
    """A settled fan-out's outcome, the seed's wording; ``None`` for a single run."""
    if len(results) <= 1:
        return None
    failed = sum(result["status"] != "completed" for result in results)
    return f"{failed} failed" if failed else f"{len(results)} ok"


def flow_card(report: FlowReport) -> dict[str, Any]:
    """The card's data (``entry.data``): every run's status, agent, duration, tokens, cost and
    error code, the flow's mode, status and usage, and the lines drawn from them."""
    document = report.document()
    runs = [
        {
            "key": result["key"],
            "agent": result["agent"],
            "status": result["status"],
            "durationMs": result["durationMs"],
            "tokensIn": result["usage"]["input"],
            "tokensOut": result["usage"]["output"],
            "cost": result["usage"]["cost"],
            "error": result.get("error"),
        }
        for result in document["results"]
    ]
    card: dict[str, Any] = {
        "v": CARD_VERSION,
        "flowId": document["flowId"],
        "mode": document["mode"],
        "status": document["status"],
        "summary": document["summary"],
        "outcome": outcome(document["results"]),
        "runs": runs,
        "usage": document["usage"],
        "durationMs": document["durationMs"],
    }
    if "budget" in document:
        # The static ceilings with their authority and spend, so a BUDGET_EXCEEDED still
        # names its binding configuration after a reload.
        card["budget"] = document["budget"]
    card["lines"] = card_lines(card)
    return card


def card_lines(card: dict[str, Any]) -> list[str]:
    head = f"flow {card['mode']} — {card['status']}"
    if card["outcome"] is not None:
        head += f": {card['outcome']}"
    lines = [head]
    lines += [f"  {line}" for line in card.get("budget", {}).get("lines", ())]
    for run in card["runs"]:
        code = f" {run['error']['code']}" if run["error"] and run["error"].get("code") else ""
        line = f"  {_MARKS.get(run['status'], '?')} {run['key']} ({run['agent']}) {run['status']}"
        line += code
        if run["status"] != "skipped":
            line += (
                f" {run['durationMs'] / 1000:.1f}s · {run['tokensIn']} in / "
                f"{run['tokensOut']} out · ${run['cost']:.4f}"
            )
        lines.append(line)
        if run["error"] is not None:
            lines.append(f"      {error_text(run['error'])}")
    usage = card["usage"]
    lines.append(
        f"  tokens {usage['input']} in / {usage['output']} out, ${usage['cost']:.4f} · "
        f"{card['durationMs'] / 1000:.1f}s · flow {card['flowId']}"
    )
    return lines
