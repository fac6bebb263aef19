"""Reading a flow trace back (``pi-squad trace report``, the Pi ``/flows report``): the rows of a
JSON-lines trace file, grouped into flow runs by ``flow.invocation_id``, summarised by mode and
label, with each run's evidence checked against what its root declared.

Execution success (the flow settled ``completed``) is kept apart from verified outcome success,
which needs an independent verifier's evidence; no built mode produces such evidence yet, so it
is reported unavailable, never promoted from process completion. Trace health is kept apart
from both: a run whose spans were lost is unauditable, not failed. A run is **incomplete** when
its root is missing or not alone, fewer rows are present than the root declared (spans lost
even after a successful write), the root declares drops or failed exports, a row's parent is
absent (not a span tree), or an event kind is undeclared. A ``flow.depends_on_unresolved`` edge
is a dangling link: counted apart, and not incomplete evidence. Older rows without
``flow.span_role`` read as root (no parent) plus children; a root's ``flow.duration_ms_total``
reads as worker time, marked legacy. Pure: it is given the file's text.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from domain.flows import trace_spans as ts


@attrs.frozen
class Row:
    name: str
    trace_id: str
    span_id: str
    parent_id: str | None
    attributes: Mapping[str, Any]
    status_code: str
    # No ``flow.span_role``: written before span roles existed.
    legacy: bool = False

    @property
    def role(self) -> str:
        declared = self.attributes.get(ts.SPAN_ROLE)
        if isinstance(declared, str):
            return declared
        return str(ts.SpanRole.ROOT if self.parent_id is None else ts.SpanRole.CHILD)


def _hex(value: object) -> str | None:
    if not isinstance(value, str) or not value:
        return None
    return value.removeprefix("0x").lower()


def parse_row(line: str) -> Row | None:
    """One span row (the OpenTelemetry SDK's JSON of a span), or ``None`` if it is not one."""
    try:
        found = json.loads(line)
    except ValueError:
        return None
    if not isinstance(found, dict):
        return None
    context = found.get("context")
    attributes = found.get("attributes", {})
    status = found.get("status", {})
    if not isinstance(context, dict) or not isinstance(attributes, dict):
        return None
    trace_id, span_id = _hex(context.get("trace_id")), _hex(context.get("span_id"))
    if trace_id is None or span_id is None:
        return None
    code = status.get("status_code") if isinstance(status, dict) else None
    return Row(
        name=str(found.get("name", "")),
        trace_id=trace_id,
        span_id=span_id,
        parent_id=_hex(found.get("parent_id")),
        attributes=attributes,
        status_code=code if isinstance(code, str) else "UNSET",
        legacy=ts.SPAN_ROLE not in attributes,
    )


def parse_rows(text: str) -> tuple[tuple[Row, ...], int]:
    """Every row of a trace file, and how many non-blank lines were not span rows."""
    rows: list[Row] = []
    malformed = 0
    for line in text.splitlines():
        if not line.strip():
            continue
        row = parse_row(line)
        if row is None:
            malformed += 1
        else:
            rows.append(row)
    return tuple(rows), malformed


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _num(value: object) -> float:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0


@attrs.frozen
class RunEvidence:
    """One flow call as its rows show it."""

    invocation_id: str
    mode: str
    label: str | None
    executed: bool
    children: int
    children_completed: int
    stages: int
    events: int
    elapsed_ms: int | None
    worker_ms: int | None
    critical_path_ms: int | None
    cost_usd: float
    expected: int | None
    observed: int
    dropped: int
    redacted: int
    failed_exports: int
    dangling_links: int
    legacy: bool
    problems: tuple[str, ...]

    @property
    def complete(self) -> bool:
        return not self.problems


def _evidence(invocation: str, rows: list[Row]) -> RunEvidence:
    roots = [r for r in rows if r.role == ts.SpanRole.ROOT]
    root = roots[0] if roots else None
    attrs_of: Mapping[str, Any] = root.attributes if root is not None else {}
    problems: list[str] = []
    if not roots:
        problems.append("no root span")
    elif len(roots) > 1:
        problems.append(f"{len(roots)} root spans")
    ids = {r.span_id for r in rows}
    orphans = sum(1 for r in rows if r.parent_id is not None and r.parent_id not in ids)
    if orphans:
        problems.append(f"{orphans} spans whose parent is missing (not a span tree)")
    kinds = {str(kind) for kind in ts.EventKind}
    events = [r for r in rows if r.role == ts.SpanRole.EVENT]
    undeclared = sum(1 for r in events if r.attributes.get(ts.EVENT_KIND) not in kinds)
    if undeclared:
        problems.append(f"{undeclared} events of an undeclared kind")
    expected = _int(attrs_of.get(ts.EXPECTED_SPANS))
    observed = len(rows)
    declared_dropped = _int(attrs_of.get(ts.DROPPED_SPANS)) or 0
    dropped = max(declared_dropped, (expected - observed) if expected is not None else 0)
    failed = _int(attrs_of.get(ts.FAILED_EXPORTS)) or 0
    if dropped:
        problems.append(f"{dropped} spans dropped")
    if failed:
        problems.append(f"{failed} failed exports")
    legacy_root = root is not None and root.legacy
    if root is not None and expected is None and not legacy_root:
        problems.append("the root declares no expected span count")
    children = [r for r in rows if r.role == ts.SpanRole.CHILD]
    worker = _int(attrs_of.get(ts.WORKER_MS))
    legacy = legacy_root or any(r.legacy for r in rows)
    if worker is None and ts.LEGACY_DURATION_TOTAL in attrs_of:
        worker, legacy = _int(attrs_of.get(ts.LEGACY_DURATION_TOTAL)), True
    status = attrs_of.get(ts.STATUS)
    # Older roots without ``flow.status``: the span's own OK status.
    if status is not None:
        executed = status == "completed"
    else:
        executed = root is not None and root.status_code == "OK"
    cost = (
        _num(attrs_of.get(ts.COST_USD))
        if ts.COST_USD in attrs_of
        else sum(_num(r.attributes.get(ts.COST_USD)) for r in children)
    )
    dangling = sum(
        len(str(r.attributes.get(ts.DEPENDS_ON_UNRESOLVED, "")).split(","))
        for r in rows
        if r.attributes.get(ts.DEPENDS_ON_UNRESOLVED)
    )
    critical = (
        _int(attrs_of.get(ts.CRITICAL_PATH_MS))
        if attrs_of.get(ts.CRITICAL_PATH_AVAILABLE) is True
        else None
    )
    mode = attrs_of.get(ts.MODE) or next(
        (r.attributes[ts.MODE] for r in rows if ts.MODE in r.attributes), "unknown"
    )
    label = attrs_of.get(ts.TRACE_LABEL)
    return RunEvidence(
        invocation_id=invocation,
        mode=str(mode),
        label=str(label) if label is not None else None,
        executed=bool(executed),
        children=len(children),
        children_completed=sum(1 for r in children if r.attributes.get(ts.STATUS) == "completed"),
        stages=sum(1 for r in rows if r.role == ts.SpanRole.STAGE),
        events=len(events),
        elapsed_ms=_int(attrs_of.get(ts.ELAPSED_MS)),
        worker_ms=worker,
        critical_path_ms=critical,
        cost_usd=cost,
        expected=expected,
        observed=observed,
        dropped=dropped,
        redacted=_int(attrs_of.get(ts.REDACTED_SPANS)) or 0,
        failed_exports=failed,
        dangling_links=dangling,
        legacy=legacy,
        problems=tuple(problems),
    )


def runs_of(rows: Iterable[Row]) -> tuple[RunEvidence, ...]:
    """The flow runs in the rows, in the order their first row appears."""
    grouped: dict[str, list[Row]] = {}
    for row in rows:
        key = row.attributes.get(ts.INVOCATION_ID)
        grouped.setdefault(str(key) if key is not None else row.trace_id, []).append(row)
    return tuple(_evidence(key, found) for key, found in grouped.items())


def _total(values: Iterable[int | None]) -> int | None:
    found = [v for v in values if v is not None]
    return sum(found) if found else None


@attrs.frozen
class TraceReport:
    runs: tuple[RunEvidence, ...]
    malformed: int = 0

    @property
    def incomplete(self) -> tuple[RunEvidence, ...]:
        return tuple(run for run in self.runs if not run.complete)

    @property
    def complete(self) -> bool:
        """Strict mode's answer: every run's evidence whole, every line a span row."""
        return bool(self.runs) and not self.incomplete and not self.malformed

    def groups(self) -> dict[tuple[str, str | None], list[RunEvidence]]:
        found: dict[tuple[str, str | None], list[RunEvidence]] = {}
        for run in self.runs:
            found.setdefault((run.mode, run.label), []).append(run)
        return found

    def document(self) -> dict[str, Any]:
        groups = []
        for (mode, label), runs in self.groups().items():
            elapsed = [r.elapsed_ms for r in runs if r.elapsed_ms is not None]
            groups.append(
                {
                    "mode": mode,
                    "label": label,
                    "runs": len(runs),
                    "executionSuccess": {
                        "succeeded": sum(r.executed for r in runs),
                        "total": len(runs),
                    },
                    "verifiedOutcomeSuccess": None,
                    "children": {
                        "completed": sum(r.children_completed for r in runs),
                        "total": sum(r.children for r in runs),
                    },
                    "elapsedMs": _total(elapsed),
                    "elapsedMsMedian": round(statistics.median(elapsed)) if elapsed else None,
                    "workerMs": _total(r.worker_ms for r in runs),
                    "criticalPathMs": _total(r.critical_path_ms for r in runs),
                    "criticalPathUnavailable": sum(r.critical_path_ms is None for r in runs),
                    "costUsd": sum(r.cost_usd for r in runs),
                    "health": {
                        "expected": _total(r.expected for r in runs),
                        "observed": sum(r.observed for r in runs),
                        "dropped": sum(r.dropped for r in runs),
                        "redacted": sum(r.redacted for r in runs),
                        "failedExports": sum(r.failed_exports for r in runs),
                        "incompleteRuns": sum(not r.complete for r in runs),
                        "danglingLinks": sum(r.dangling_links for r in runs),
                    },
                    "topology": {
                        "stageSpans": sum(r.stages for r in runs),
                        "events": sum(r.events for r in runs),
                    },
                    "legacyRuns": sum(r.legacy for r in runs),
                }
            )
        return {
            "complete": self.complete,
            "runs": len(self.runs),
            "malformedLines": self.malformed,
            "groups": groups,
            "incomplete": [
                {"invocationId": r.invocation_id, "mode": r.mode, "problems": list(r.problems)}
                for r in self.incomplete
            ],
        }

    def lines(self) -> list[str]:
        """The report for people: per mode and label, success, time, health, topology."""
        out: list[str] = []
        for group in self.document()["groups"]:
            name = group["mode"] + (f" [{group['label']}]" if group["label"] else "")
            ok = group["executionSuccess"]
            out.append(
                f"{name}: {group['runs']} runs; execution success {ok['succeeded']}/{ok['total']};"
                " verified outcome success: unavailable (no verifier evidence)"
            )
            kids = group["children"]
            critical = group["criticalPathMs"]
            out.append(
                f"  children {kids['completed']}/{kids['total']} completed; elapsed "
                f"{group['elapsedMs']} ms, worker {group['workerMs']} ms, critical path "
                f"{'unavailable' if critical is None else f'{critical} ms'}; "
                f"cost ${group['costUsd']:.4f}"
            )
            if group["legacyRuns"]:
                out.append(
                    f"  {group['legacyRuns']} runs are legacy compatibility data (worker time "
                    "from flow.duration_ms_total, or rows without span roles)"
                )
            health = group["health"]
            out.append(
                f"  trace health: {health['observed']}/{health['expected']} spans observed, "
                f"{health['dropped']} dropped, {health['redacted']} redacted, "
                f"{health['failedExports']} failed exports; {health['incompleteRuns']} runs "
                f"incomplete; {health['danglingLinks']} dangling links"
            )
            topology = group["topology"]
            out.append(
                f"  topology: {topology['stageSpans']} stage spans, {topology['events']} events"
            )
        if self.malformed:
            out.append(f"{self.malformed} lines are not span rows")
        for run in self.incomplete:
            out.append(f"incomplete: {run.invocation_id} ({run.mode}): {'; '.join(run.problems)}")
        if not self.runs:
            out.append("no flow runs in this trace")
        out.append("evidence: complete" if self.complete else "evidence: INCOMPLETE")
        return out


def report(text: str) -> TraceReport:
    rows, malformed = parse_rows(text)
    return TraceReport(runs_of(rows), malformed)
