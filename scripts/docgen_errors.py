"""The error catalogue of ``docs/reference/errors.md``: every ``domain.errors.ErrorCode``, once.

Flow codes take their cause, fix and retryability from ``domain.flows.catalogue`` (pi-flows'
catalogue, the one the program answers with); squad and delegation codes take their words from
``docgen_squad_codes``. A code in no table, or a table entry that names no code, stops the
generator.
"""

from __future__ import annotations

from docgen_squad_codes import DELEGATION, SQUAD

from domain.errors import ErrorCode
from domain.flows.catalogue import CATALOGUE


def cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def check_coverage() -> None:
    flows = {str(code) for code in CATALOGUE}
    documented = flows | set(SQUAD) | set(DELEGATION)
    codes = {str(code) for code in ErrorCode}
    # A flow may answer with a shared code (a brief's SPEC_*): listed in both tables.
    overlap = set(DELEGATION) & (set(SQUAD) | flows)
    if codes != documented or overlap:
        raise SystemExit(
            "docgen_errors: codes without words "
            f"{sorted(codes - documented)}, words without a code {sorted(documented - codes)}, "
            f"codes in two tables {sorted(overlap)}"
        )


def squad_table() -> list[str]:
    lines = [
        "| Code | Exit | Meaning | Typical causes (where raised) | How to fix |",
        "|---|---|---|---|---|",
    ]
    for code in ErrorCode:
        if str(code) in SQUAD:
            meaning, causes, fix = SQUAD[str(code)]
            exit_status = 2 if code is ErrorCode.USAGE else 1
            lines.append(
                f"| `{code}` | {exit_status} | {cell(meaning)} | {cell(causes)} | {cell(fix)} |"
            )
    return lines


def flow_table() -> list[str]:
    lines = ["| Code | Cause | Fix | Retryable unchanged |", "|---|---|---|---|"]
    for code in ErrorCode:
        if code in CATALOGUE:
            entry = CATALOGUE[code]
            retryable = "yes" if entry.retryable else "no"
            lines.append(f"| `{code}` | {cell(entry.cause)} | {cell(entry.fix)} | {retryable} |")
    return lines


def delegation_table() -> list[str]:
    lines = ["| Code | When |", "|---|---|"]
    lines += [
        f"| `{code}` | {cell(DELEGATION[str(code)])} |"
        for code in ErrorCode
        if str(code) in DELEGATION
    ]
    return lines


def render() -> str:
    check_coverage()
    lines = [
        "## Squads, specs and the shared codes",
        "",
        "Raised by `validate`, `create`, `run`, `status`, `modify`, `review`, `verify`, `report`,",
        "`watch` and the squad tools; flows and delegation use the shared ones (spec, record,",
        "I/O) with the same meaning.",
        "",
        *squad_table(),
        "",
        "## Flows",
        "",
        "pi-flows' own codes, and the shared ones a flow answers with (an attested flow's "
        "brief, its attestation), from the catalogue every flow error carries "
        "(`domain/flows/catalogue.py`).",
        "",
        *flow_table(),
        "",
        "## Delegation",
        "",
        "The `delegate` host's refusals; nothing was reserved, recorded or started.",
        "",
        *delegation_table(),
    ]
    return "\n".join(lines) + "\n"
