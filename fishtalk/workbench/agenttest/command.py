"""The body of ``fishtalk test``: load the files, run them, report; returns how the run went.

Output goes through the ``out``/``err`` callables the CLI passes (this module prints
nothing itself, never exits and picks no exit code: :class:`RunOutcome` says how the run
went and the CLI edge maps it, and the reports' per-result ``exit_code``, to codes).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from fishtalk.core.errors import FishtalkError
from fishtalk.workbench.agenttest.progress import PlainView, View
from fishtalk.workbench.agenttest.report import summary_lines, write_reports
from fishtalk.workbench.agenttest.results import TestResult
from fishtalk.workbench.agenttest.runner import (
    RunOptions,
    Target,
    plan,
    run_tests,
    sim_agent_settings,
    sim_target,
)
from fishtalk.workbench.agenttest.spec import TestFile, load_test
from fishtalk.workbench.agenttest.summary import heard_budgets

if TYPE_CHECKING:
    from rich.console import Console

SIM_DEFAULT_AGENT = "converse"
"""The agent id used against the sim when neither --agent nor the file names one."""


@dataclass(frozen=True)
class TestCommand:
    """What ``fishtalk test`` was asked to do."""

    __test__ = False  # not a pytest class

    files: Sequence[Path]
    target: Target
    sim: bool = False
    scenario: str | None = None
    agent_settings: Mapping[str, object] = field(default_factory=dict)
    """With ``sim``: ``[agent]`` settings of the simulated agent (``--agent-setting``)."""
    options: RunOptions = field(default_factory=RunOptions)
    junit: Path | None = None
    json_path: Path | None = None
    html: Path | None = None


def load_all(files: Sequence[Path]) -> list[TestFile]:
    """Every file parsed; the first bad one raises :class:`TestFileError` (exit 2)."""
    return [load_test(path) for path in files]


@dataclass(frozen=True)
class RunOutcome:
    """How a ``fishtalk test`` run went (the CLI edge maps it to the exit code)."""

    results: Sequence[TestResult]
    interrupted: bool = False
    """Ctrl-C stopped the run (the open sessions were hung up)."""

    @property
    def error(self) -> FishtalkError | None:
        """The error that kept the first errored session from running, if any."""
        return next((r.failure for r in self.results if r.status == "error" and r.failure), None)

    @property
    def failed(self) -> bool:
        """Whether any test failed, a heard budget across runs included."""
        results = self.results
        return any(not r.passed for r in results) or any(
            not b.passed for b in heard_budgets(results)
        )


async def _run(
    command: TestCommand, tests: Sequence[TestFile], view: View
) -> tuple[list[TestResult], bool]:
    def start(test: TestFile, run: int) -> None:
        view.started(test.name if run == 1 else f"{test.name} #{run}")

    if command.sim:
        settings = sim_agent_settings(tests, command.agent_settings)
        async with sim_target(
            command.scenario, command.target.agent_id, command.target.timeouts, settings
        ) as target:
            target = Target(
                target.agent_id,
                api_url=target.api_url,
                api_key=target.api_key,
                timeouts=target.timeouts,
                fallback_agent=SIM_DEFAULT_AGENT,
                config_path=command.target.config_path,
                journal=command.target.journal,
            )
            results = await run_tests(
                tests, target, command.options, on_result=view.finished, on_start=start
            )
    else:
        results = await run_tests(
            tests, command.target, command.options, on_result=view.finished, on_start=start
        )
    task = asyncio.current_task()
    interrupted = task is not None and task.cancelling() > 0
    return results, interrupted


def run_command(
    command: TestCommand,
    out: Callable[[str], None],
    *,
    code_for_error: Callable[[BaseException], int],
    console: Console | None = None,
) -> RunOutcome:
    """Run ``command``, writing progress lines to ``out`` (or, given a terminal's
    ``console``, a live display on it); how it went. ``code_for_error``: the CLI's exit code
    for an error, for the JSON report's ``exit_code`` field. Bad files and an
    over-the-cap run raise their :class:`~fishtalk.core.errors.FishtalkError` (exit 2) before any
    session starts."""
    tests = load_all(command.files)
    plan(tests, command.options)  # the --max-sessions cap, before anything starts

    if console is not None:
        from fishtalk.workbench.agenttest.progress import LiveView

        view: View = LiveView(console, len(tests) * command.options.repeat)
    else:
        view = PlainView(out)
    with view:
        results, interrupted = asyncio.run(_run(command, tests, view))
    for line in summary_lines(results):
        out(line)
    if interrupted:
        out("interrupted: the open sessions were hung up; the reports hold what finished")
    write_reports(
        results,
        junit=command.junit,
        json_path=command.json_path,
        html=command.html,
        code_for_error=code_for_error,
    )
    return RunOutcome(results, interrupted)
