"""Reports of a ``fishtalk test`` run: plain lines, JUnit XML and JSON (pure functions)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from fishtalk.core.conversation.latency import figure
from fishtalk.workbench.agenttest.results import TestResult
from fishtalk.workbench.agenttest.summary import HeardBudget, heard_budgets, summary

EXCERPT_LINES = 8
"""Transcript lines shown under a failure."""


def result_lines(result: TestResult) -> list[str]:
    """One line per result, then (for a failure) what was expected and seen."""
    took = f"({figure(result.duration)})"
    if result.status == "passed":
        return [f"PASS {result.label} {took}"]
    if result.status == "error":
        return [f"ERROR {result.label} {took}: {result.error}"]
    out = [f"FAIL {result.label} {took}  [{result.path}]"]
    for failure in result.failures:
        out.append(f"  {failure.where}: expected {failure.expected}")
        for line in failure.seen.splitlines():
            out.append(f"    seen {line}")
    if result.transcript:
        out.append("  transcript (last lines):")
        out.extend(f"    {line}" for line in result.transcript[-EXCERPT_LINES:])
    if result.tool_calls:
        out.append("  tool calls: " + ", ".join(result.tool_calls))
    if result.journal:
        out.append(f"  journal: {result.journal}")
    return out


def summary_lines(results: Sequence[TestResult]) -> list[str]:
    """The closing lines: counts, pass rate per repeated test, latency percentiles."""
    s = summary(results)
    opened = s["sessions"]
    sessions = "no session opened" if not opened else f"{opened} session{'s' * (opened != 1)}"
    out = [f"{s['passed']} passed, {s['failed']} failed, {s['errors']} errors ({sessions})"]
    repeated = {r.path or r.name for r in results if r.run > 1}
    for key, rate in s["pass_rate"].items():
        if key in repeated:
            out.append(f"  pass rate {rate:.0%}: {key}")
    if s["first_text_p50"] is not None:
        p50, p95 = figure(s["first_text_p50"]), figure(s["first_text_p95"])
        out.append(f"first text: p50 {p50}, p95 {p95}")
    if s["heard_p50"] is not None:
        out.append(f"heard: p50 {figure(s['heard_p50'])}, p95 {figure(s['heard_p95'])}")
    for budget in heard_budgets(results):
        out.extend(budget_lines(budget))
    return out


def budget_lines(budget: HeardBudget) -> list[str]:
    """A heard budget across runs: PASS/FAIL, then (failing) what was expected and seen."""
    p95 = budget.p95
    seen = f"p95 {figure(p95)}" if p95 is not None else "no figure"
    head = f"{budget.label} ({seen}, budget {budget.budget:g} s)  [{budget.path}]"
    failure = budget.failure
    if failure is None:
        return [f"PASS {head}"]
    return [f"FAIL {head}", f"  expected {failure[0]}", f"    seen {failure[1]}"]


def junit_xml(results: Sequence[TestResult]) -> str:
    """The results as JUnit XML (one testsuite, one testcase per run)."""
    s = summary(results)
    budgets = heard_budgets(results)
    suite = ET.Element(
        "testsuite",
        name="fishtalk",
        tests=str(s["total"] + len(budgets)),
        failures=str(s["failed"] + sum(not b.passed for b in budgets)),
        errors=str(s["errors"]),
        time=f"{sum(r.duration for r in results):.3f}",
    )
    for r in results:
        case = ET.SubElement(
            suite,
            "testcase",
            classname=r.path or "fishtalk",
            name=r.label,
            time=f"{r.duration:.3f}",
        )
        if r.heard:
            props = ET.SubElement(case, "properties")
            for turn in r.heard:
                value = (
                    f"{turn.heard * 1000.0:.1f} ms"
                    if turn.heard is not None
                    else f"no figure: {turn.incomplete or 'not measured'}"
                )
                ET.SubElement(props, "property", name=f"heard {turn.where}", value=value)
        if r.status == "failed":
            first = r.failures[0]
            node = ET.SubElement(
                case, "failure", message=f"{first.where}: expected {first.expected}"
            )
            node.text = "\n".join(result_lines(r)[1:])
        elif r.status == "error":
            node = ET.SubElement(case, "error", message=r.error or "error")
            node.text = r.error
    for budget in budgets:
        case = ET.SubElement(
            suite, "testcase", classname=budget.path or "fishtalk", name=budget.label, time="0.000"
        )
        failure = budget.failure
        if failure is not None:
            node = ET.SubElement(case, "failure", message=f"expected {failure[0]}")
            node.text = "\n".join(budget_lines(budget)[1:])
    ET.indent(suite)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(suite, encoding="unicode")


def json_report(
    results: Sequence[TestResult], code_for_error: Callable[[BaseException], int]
) -> dict[str, Any]:
    """The results as plain JSON (``code_for_error``: the CLI's code for an error)."""
    return {
        "summary": dict(summary(results)),
        "results": [r.to_dict(code_for_error) for r in results],
    }


def write_reports(
    results: Sequence[TestResult],
    *,
    junit: Path | None = None,
    json_path: Path | None = None,
    html: Path | None = None,
    code_for_error: Callable[[BaseException], int],
) -> None:
    """Write the requested report files (``html``: the run's page, with session pages)."""
    if junit is not None:
        junit.write_text(junit_xml(results), "utf-8")
    if json_path is not None:
        json_path.write_text(
            json.dumps(json_report(results, code_for_error), indent=2) + "\n", "utf-8"
        )
    if html is not None:
        from fishtalk.workbench.reports.testrun import write_run_page

        write_run_page(results, html)
