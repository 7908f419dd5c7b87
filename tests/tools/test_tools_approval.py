"""The one approval policy (tools/approval.py): only a terminal answer, or --yes, approves."""

from __future__ import annotations

import asyncio
import io
import os
import pty
import select
import time
from collections.abc import Iterator
from typing import TextIO

import pytest

from fishtalk.engine.tools.approval import (
    approve_all,
    choose_approver,
    is_terminal,
    terminal_approver,
)
from fishtalk.engine.tools.registry import ApprovalRequest

REQUEST = ApprovalRequest(call_id="c1", tool_name="touch", params={"a": 1})


async def _never_called(request: ApprovalRequest) -> bool:
    raise AssertionError("the approver must not be asked")


@pytest.fixture
def terminal() -> Iterator[tuple[TextIO, TextIO, int]]:
    """A real pty: its slave end as an input and an output text stream, and the master fd."""
    master, slave = pty.openpty()
    reader = open(slave, encoding="utf-8")  # noqa: SIM115
    writer = open(os.dup(slave), "w", encoding="utf-8")  # noqa: SIM115
    try:
        yield reader, writer, master
    finally:
        reader.close()
        writer.close()
        os.close(master)


def test_pipes_and_files_are_not_terminals(terminal: tuple[TextIO, TextIO, int]) -> None:
    assert not is_terminal(io.StringIO("y\n"))
    assert not is_terminal(None)
    assert is_terminal(terminal[0])
    assert is_terminal(terminal[1])


def test_choose_approver(terminal: tuple[TextIO, TextIO, int]) -> None:
    tty_in, tty_out, _ = terminal
    piped = io.StringIO("y\n")
    assert choose_approver(_never_called, answers_from=piped, question_to=tty_out) is None
    assert choose_approver(_never_called, answers_from=tty_in, question_to=piped) is None
    chosen_tty = choose_approver(_never_called, answers_from=tty_in, question_to=tty_out)
    assert chosen_tty is _never_called
    chosen = choose_approver(_never_called, answers_from=piped, question_to=piped, assume_yes=True)
    assert chosen is approve_all
    assert asyncio.run(approve_all(REQUEST)) is True


def test_terminal_approver_never_reads_a_piped_yes() -> None:
    source = io.StringIO("y\n")
    sink = io.StringIO()
    assert asyncio.run(terminal_approver(source, sink)(REQUEST)) is False
    assert source.tell() == 0  # the "y" was not consumed as an answer
    assert sink.getvalue() == ""


def test_terminal_approver_takes_a_terminal_answer(
    terminal: tuple[TextIO, TextIO, int],
) -> None:
    tty_in, tty_out, master = terminal
    os.write(master, b"yes\n")
    assert asyncio.run(terminal_approver(tty_in, tty_out)(REQUEST)) is True
    # The terminal's echo of "yes" and the prompt may arrive in separate reads.
    shown = ""
    deadline = time.monotonic() + 10
    while "Allow? [y/N]" not in shown and time.monotonic() < deadline:
        if select.select([master], [], [], 0.1)[0]:
            shown += os.read(master, 4096).decode()
    assert "The agent wants to run client tool 'touch'" in shown
    assert "Allow? [y/N]" in shown
