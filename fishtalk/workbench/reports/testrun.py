"""The test-run page: one self-contained HTML file from the results of ``fishtalk test``.

It holds the run's summary, each run of each test with its failing expectations (what was
expected, what was seen), per-turn latency waterfalls, and a link to each session's own
page (written next to the report) or journal. With ``--repeat`` it adds each test's pass
rate and the heard-latency histogram with p50 and p95 marked. Built from the runner's
:class:`~fishtalk.workbench.agenttest.runner.TestResult` values, as the other reports are.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from fishtalk.core.errors import JournalError
from fishtalk.engine.journal.reader import read_journal
from fishtalk.workbench.agenttest.results import TestResult
from fishtalk.workbench.agenttest.summary import HeardBudget, heard_budgets, summary
from fishtalk.workbench.reports.charts import histogram_svg, span, waterfall_svg
from fishtalk.workbench.reports.page import document, esc, facts, file_href, filters, ms
from fishtalk.workbench.reports.session import session_page

STATUS_LABEL = {"passed": "PASS", "failed": "FAIL", "error": "ERROR"}


def _seconds(value: float | None) -> str:
    return esc(ms(value * 1000.0 if value is not None else None))


def _failures(result: TestResult) -> str:
    if result.status == "error":
        return f'<p class="why"><strong>Could not run:</strong> {esc(result.error or "error")}</p>'
    parts = []
    for failure in result.failures:
        parts.append(
            f'<div class="why"><strong>{esc(failure.where)}</strong>: expected '
            f"{esc(failure.expected)}<pre>seen {esc(failure.seen)}</pre></div>"
        )
    return "".join(parts)


def _turns(result: TestResult, scale: float) -> str:
    rows = []
    for turn in result.heard:
        figure = f"heard {ms(turn.heard * 1000)}" if turn.heard is not None else turn.missing()
        chart = waterfall_svg(turn.waterfall, scale) if turn.waterfall is not None else ""
        rows.append(f'<div class="wf"><h3>{esc(turn.where)} · {esc(figure)}</h3>{chart}</div>')
    return "".join(rows)


def _links(result: TestResult, pages: Mapping[str, str], base: Path | None) -> str:
    links = []
    if result.journal and result.journal in pages:
        links.append(f'<a href="{file_href(pages[result.journal], base)}">session page</a>')
    if result.journal:
        links.append(f'<a href="{file_href(result.journal, base)}">journal</a>')
    return f"<p>{' · '.join(links)}</p>" if links else ""


def _result(result: TestResult, scale: float, pages: Mapping[str, str], base: Path | None) -> str:
    status = result.status if result.status in STATUS_LABEL else "error"
    kind = "passed" if status == "passed" else "failed"
    badge = "ok" if status == "passed" else "bad"
    transcript = ""
    if result.transcript:
        text = "\n".join(result.transcript)
        transcript = (
            f'<details class="card"><summary>Transcript ({len(result.transcript)} lines)'
            f"</summary><pre>{esc(text)}</pre></details>"
        )
    tools = f"<p>Tool calls: {esc(', '.join(result.tool_calls))}</p>" if result.tool_calls else ""
    return (
        f'<article class="test {status}" data-kind="{kind}"><h3>'
        f'<span class="badge {badge}">{STATUS_LABEL[status]}</span> {esc(result.label)} '
        f'<span class="label">{esc(f"{result.duration:.1f} s")} · {esc(result.path)}</span></h3>'
        f"{_failures(result)}{_turns(result, scale)}{tools}{transcript}"
        f"{_links(result, pages, base)}</article>"
    )


def _budget(budget: HeardBudget) -> str:
    failure = budget.failure
    p95 = ms(budget.p95 * 1000) if budget.p95 is not None else "no figure"
    head = f"{budget.label} ({p95}, budget {budget.budget:g} s)"
    if failure is None:
        return f'<p class="why"><span class="badge ok">PASS</span> {esc(head)}</p>'
    return (
        f'<div class="why"><span class="badge bad">FAIL</span> {esc(head)}: expected '
        f"{esc(failure[0])}<pre>seen {esc(failure[1])}</pre></div>"
    )


def _repeats(results: Sequence[TestResult], rates: Mapping[str, float]) -> str:
    repeated = {r.path or r.name for r in results if r.run > 1}
    if not repeated:
        return ""
    rows = "".join(
        f"<li>{esc(f'{rate:.0%}')} passed: {esc(key)}</li>"
        for key, rate in rates.items()
        if key in repeated
    )
    heard = [t.heard * 1000.0 for r in results for t in r.heard if t.heard is not None]
    s = summary(results)
    p50 = s["heard_p50"] * 1000.0 if s["heard_p50"] is not None else None
    p95 = s["heard_p95"] * 1000.0 if s["heard_p95"] is not None else None
    return (
        f"<section><h2>Across runs</h2><ul>{rows}</ul>"
        f"<h3>Heard latency, every turn of every run</h3>{histogram_svg(heard, p50, p95)}"
        "</section>"
    )


def run_page(
    results: Sequence[TestResult], pages: Mapping[str, str] | None = None, base: Path | None = None
) -> str:
    """The page of a run. ``pages`` maps a result's journal to its session page's path;
    links are made relative to ``base`` (the report's directory) when they can be."""
    s = summary(results)
    rows = [
        ("Passed", esc(s["passed"])),
        ("Failed", esc(s["failed"])),
        ("Errors", esc(s["errors"])),
        ("Sessions", esc(s["total"])),
        ("Time", esc(f"{sum(r.duration for r in results):.1f} s")),
        (
            "First text p50 / p95",
            f"{_seconds(s['first_text_p50'])} / {_seconds(s['first_text_p95'])}",
        ),
        ("Heard p50 / p95", f"{_seconds(s['heard_p50'])} / {_seconds(s['heard_p95'])}"),
    ]
    scale = max(
        (span(t.waterfall) for r in results for t in r.heard if t.waterfall is not None),
        default=0.0,
    )
    counts = [(s["failed"], "failed"), (s["errors"], "errors"), (s["passed"], "passed")]
    verdict = ", ".join(f"{n} {what}" for n, what in counts if n) + f" of {s['total']}"
    budgets = "".join(_budget(b) for b in heard_budgets(results))
    body = [
        f"<header><h1>fishtalk test: {esc(verdict)}</h1>{facts(rows)}</header>",
        f"<section><h2>Heard budgets</h2>{budgets}</section>" if budgets else "",
        _repeats(results, s["pass_rate"]),
        "<section><h2>Tests</h2>",
        filters([("passed", "Passed"), ("failed", "Failed")], "Search the tests"),
        '<div class="items">',
        *(_result(r, scale, pages or {}, base) for r in results),
        "</div></section>",
    ]
    return document("fishtalk test run", "\n".join(body))


def write_run_page(results: Sequence[TestResult], path: Path) -> None:
    """Write the run's page to ``path`` and each session's page into ``<stem>-sessions/``
    beside it (a journal that cannot be read is linked as it is)."""
    pages: dict[str, str] = {}
    folder = path.with_name(f"{path.stem}-sessions")
    for result in results:
        if not result.journal or result.journal in pages:
            continue
        try:
            journal = read_journal(Path(result.journal))
        except JournalError:
            continue
        folder.mkdir(parents=True, exist_ok=True)
        page = folder / f"{Path(result.journal).stem}.html"
        page.write_text(session_page(journal), "utf-8")
        pages[result.journal] = str(page.resolve())
    path.write_text(run_page(results, pages, path.parent), "utf-8")


__all__ = ["run_page", "write_run_page"]
