"""How a ``fishtalk test`` run shows its progress: plain lines, or a live display on a
terminal (rich). Both write only to what the CLI hands them."""

from __future__ import annotations

import time
from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING, Protocol

from fishtalk.workbench.agenttest.report import result_lines
from fishtalk.workbench.agenttest.results import TestResult

if TYPE_CHECKING:
    from rich.console import Console, RenderableType
    from rich.live import Live


class View(Protocol):
    """Told when a session starts and when a test finishes."""

    def __enter__(self) -> View: ...

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...

    def started(self, label: str) -> None:
        """A session is connected and its turns begin."""

    def finished(self, result: TestResult) -> None:
        """A test finished (passed, failed or errored)."""


class PlainView:
    """One line per event: ``RUN name``, then ``PASS``/``FAIL``/``ERROR`` with details."""

    def __init__(self, out: Callable[[str], None]) -> None:
        self._out = out

    def __enter__(self) -> PlainView:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        return None

    def started(self, label: str) -> None:
        self._out(f"RUN  {label}")

    def finished(self, result: TestResult) -> None:
        for line in result_lines(result):
            self._out(line)


class LiveView:
    """On a terminal: finished tests scroll above a live panel of the running ones with
    their elapsed time and the counts so far. Remote text is shown literally."""

    def __init__(self, console: Console, total: int) -> None:
        self._console = console
        self._total = total
        self._running: dict[str, float] = {}
        self._passed = 0
        self._failed = 0
        self._live: Live | None = None

    def __enter__(self) -> LiveView:
        from rich.live import Live

        self._live = Live(
            get_renderable=self._render,
            console=self._console,
            refresh_per_second=4,
            transient=True,
        )
        self._live.__enter__()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._live is not None:
            self._live.__exit__(exc_type, exc, tb)
            self._live = None

    def _render(self) -> RenderableType:
        from rich.console import Group
        from rich.spinner import Spinner
        from rich.text import Text

        done = self._passed + self._failed
        now = time.monotonic()
        rows: list[RenderableType] = [
            Spinner("dots", text=Text(f"{label}  {now - since:.0f} s"))
            for label, since in self._running.items()
        ]
        counts = Text(f"{done}/{self._total} done: ")
        counts.append(f"{self._passed} passed", style="green")
        counts.append(", ")
        counts.append(f"{self._failed} failed", style="red" if self._failed else "")
        return Group(*rows, counts)

    def started(self, label: str) -> None:
        self._running[label] = time.monotonic()

    def finished(self, result: TestResult) -> None:
        from rich.text import Text

        self._running.pop(result.label, None)
        if result.passed:
            self._passed += 1
        else:
            self._failed += 1
        lines = result_lines(result)
        style = {"passed": "green", "failed": "red", "error": "yellow"}[result.status]
        head = Text(lines[0][: lines[0].index(" ")], style=f"bold {style}")
        head.append(lines[0][lines[0].index(" ") :])
        self._console.print(head)
        for line in lines[1:]:
            self._console.print(Text(line), soft_wrap=True)
