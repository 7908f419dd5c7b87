"""fishtalk.engine.aio: the one task set and the one daemon-thread future."""

from __future__ import annotations

import asyncio
import threading

import pytest
from support.child import run_python

from fishtalk.engine.aio import TaskSet, in_daemon_thread


async def test_task_set_owns_reports_and_cancels() -> None:
    failures: list[tuple[str, str]] = []
    tasks = TaskSet("t", on_error=lambda task, exc: failures.append((task.get_name(), str(exc))))
    gate = asyncio.Event()

    async def waits() -> None:
        await gate.wait()

    async def fails() -> None:
        raise ValueError("broken")

    async def returns() -> int:
        return 7

    long = tasks.spawn(waits(), "long")
    bad = tasks.spawn(fails(), "bad")
    ok = tasks.spawn(returns())
    assert long.get_name() == "t long"
    await asyncio.wait({bad, ok})
    assert ok.result() == 7
    assert failures == [("t bad", "broken")]
    assert list(tasks) == [long]  # finished tasks leave the set
    await asyncio.wait_for(tasks.cancel_all(), 5)
    assert long.cancelled()
    assert len(tasks) == 0


async def test_task_set_cancel_all_keeps_the_caller() -> None:
    tasks = TaskSet()
    done = asyncio.Event()

    async def teardown() -> None:
        await tasks.cancel_all(keep=asyncio.current_task())  # type: ignore[arg-type]
        done.set()

    other = tasks.spawn(asyncio.sleep(60))
    me = tasks.spawn(teardown())
    await asyncio.wait_for(me, 5)
    assert done.is_set()
    assert other.cancelled()


async def test_daemon_thread_result_and_error() -> None:
    assert await in_daemon_thread(lambda: threading.current_thread().daemon) is True

    def broken() -> None:
        raise KeyError("x")

    with pytest.raises(KeyError):
        await in_daemon_thread(broken)

    def exits() -> None:
        raise SystemExit(3)

    with pytest.raises(RuntimeError, match="SystemExit"):
        await in_daemon_thread(exits, name="quitter")


async def test_daemon_thread_is_abandoned_not_joined() -> None:
    release = threading.Event()
    finished = threading.Event()

    def stuck() -> str:
        release.wait(10)
        finished.set()
        return "late"

    future = in_daemon_thread(stuck)
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(future, 0.05)
    assert future.cancelled()
    release.set()
    assert await asyncio.to_thread(finished.wait, 10)
    await asyncio.sleep(0)  # the late result is dropped without an error


_EXIT_PROBE = """
import atexit, sys
sd = sys.modules["sounddevice"] = type(sys)("sounddevice")
sd._exit_handler = lambda: print("Pa_Terminate")
atexit.register(sd._exit_handler)
from fishtalk.engine import native
for _ in range(int(sys.argv[1])):
    native.note_wedged_audio_stream()
print("exiting")
"""


@pytest.mark.parametrize(("wedged", "terminated"), [(0, True), (1, False), (2, False)])
def test_a_wedged_audio_stream_keeps_portaudio_from_terminating_at_exit(
    wedged: int, terminated: bool
) -> None:
    done = run_python(_EXIT_PROBE, str(wedged), timeout=60)
    assert done.returncode == 0, done.stderr
    expected = ["exiting", "Pa_Terminate"] if terminated else ["exiting"]
    assert done.stdout.split() == expected
