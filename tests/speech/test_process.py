"""Decoding in the speech process (:mod:`fishtalk.speech.process`): a decode runs in a
child of its own (pocketsphinx holds the GIL for a whole decode), its result or its
exception comes back, and a child that dies is reported in one line, then replaced."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator

import numpy as np
import pytest

from fishtalk.core.errors import SpeechUnavailableError
from fishtalk.speech import stt
from fishtalk.speech.process import SpeechProcess, SpeechProcessError
from fishtalk.speech.stt import Recognizer

pytestmark = pytest.mark.skipif(not stt.available(), reason="needs the speech extra")


@pytest.fixture
def process() -> Iterator[SpeechProcess]:
    running = SpeechProcess()
    try:
        yield running
    finally:
        running.close()


def test_a_call_runs_in_the_child_and_returns_its_result(process: SpeechProcess) -> None:
    assert process.pid is None  # started on first use
    assert process.run(Recognizer.known, "balance") is True
    assert process.run(Recognizer.known, "xqzzyv") is False
    pid = process.pid
    assert pid is not None
    assert pid != os.getpid()
    silence = np.zeros(16_000, np.int16)
    assert process.run(Recognizer.free, silence, 16_000).heard_nothing
    assert process.pid == pid  # one child, loaded once


def test_an_exception_in_the_child_is_raised_again(process: SpeechProcess) -> None:
    with pytest.raises(AttributeError):
        process.run(Recognizer.free, None, 16_000)  # type: ignore[arg-type]
    assert process.run(Recognizer.known, "balance") is True  # the child carries on


def test_a_child_that_dies_is_one_error_then_replaced(process: SpeechProcess) -> None:
    process.run(Recognizer.known, "balance")
    first = process.pid
    with pytest.raises(SpeechProcessError, match="the speech process stopped"):
        process.run(sys.exit)  # the child exits mid-call
    assert process.pid is None
    assert process.run(Recognizer.known, "balance") is True
    assert process.pid not in (None, first)


def test_close_stops_the_child(process: SpeechProcess) -> None:
    process.run(Recognizer.known, "balance")
    assert process.pid is not None
    process.close()
    assert process.pid is None


def test_an_error_that_names_a_missing_part_comes_back_whole(process: SpeechProcess) -> None:
    # A model whose package is missing is refused in the child, with the same one line
    # (and the same type, which picks the exit code) as in this process.
    with pytest.raises(SpeechUnavailableError, match="offline speech needs nothing-here"):
        process.run(_missing)


def _missing(_recognizer: Recognizer) -> None:
    raise SpeechUnavailableError("nothing-here", "pip install it")
