"""fd 2 goes to a log file while the TUI runs; the real stderr comes back afterwards."""

from __future__ import annotations

import os
import subprocess
import textwrap
from pathlib import Path

from support.child import run_python

_CHILD = textwrap.dedent(
    """
    import ctypes, sys
    from fishtalk.engine.native import stderr_to_log

    libc = ctypes.CDLL(None)
    sys.stderr.write("before\\n")
    sys.stderr.flush()
    with stderr_to_log("tui") as path:
        message = b"ALSA lib pcm.c: native chatter\\n"
        libc.write(2, message, len(message))
        sys.__stderr__.write("drawn screen\\n")  # what Textual's driver writes to
        sys.__stderr__.flush()
        print(path)
    sys.stderr.write("after\\n")
    sys.stderr.flush()
    message = b"native after\\n"
    libc.write(2, message, len(message))
    """
)


def _run(tmp_path: Path) -> tuple[subprocess.CompletedProcess[str], Path]:
    state = tmp_path / "state"
    env = {**os.environ, "XDG_STATE_HOME": str(state)}
    done = run_python(_CHILD, timeout=30, env=env)
    return done, state


def test_c_level_stderr_lands_in_the_log_not_the_terminal(tmp_path: Path) -> None:
    done, state = _run(tmp_path)
    assert done.returncode == 0, done.stderr
    log = Path(done.stdout.strip())
    assert log.is_relative_to(state)
    assert log.name == "tui-stderr.log"
    assert log.read_text("utf-8") == "ALSA lib pcm.c: native chatter\n"
    assert oct(log.stat().st_mode & 0o777) == oct(0o600)
    # The terminal saw the screen (on the duplicate) and everything outside the block.
    assert done.stderr == "before\ndrawn screen\nafter\nnative after\n"


def test_the_log_is_appended_across_runs(tmp_path: Path) -> None:
    _run(tmp_path)
    done, _ = _run(tmp_path)
    log = Path(done.stdout.strip())
    assert log.read_text("utf-8").count("native chatter") == 2


def test_an_unwritable_log_dir_redirects_nothing(tmp_path: Path) -> None:
    blocker = tmp_path / "state"
    blocker.write_text("a file where the directory should be", "utf-8")
    done = run_python(_CHILD, timeout=30, env={**os.environ, "XDG_STATE_HOME": str(blocker)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "None"
    assert "native chatter" in done.stderr


def test_a_big_log_starts_afresh(tmp_path: Path) -> None:
    from fishtalk.engine.native import MAX_LOG_BYTES

    done, _ = _run(tmp_path)
    log = Path(done.stdout.strip())
    log.write_bytes(b"x" * MAX_LOG_BYTES)
    _run(tmp_path)
    assert log.read_text("utf-8") == "ALSA lib pcm.c: native chatter\n"
