"""``fishtalk demo`` takes the line-mode flags ``chat`` takes: ``--plain`` and
``--text-only`` (one declaration of each, in :mod:`fishtalk.cli.options`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.webrtc


def test_demo_plain_text_only() -> None:
    """``--text-only`` reaches the session (the events header says ``spoken: false``) and
    ``--plain`` is accepted; end of input hangs up after the greeting."""
    env = {**os.environ, "XDG_CONFIG_HOME": "/nonexistent-fishtalk-test"}
    env.pop("FISHTALK_CONFIG", None)
    proc = subprocess.run(
        [sys.executable, "-m", "fishtalk", "demo", "--scenario", "converse", "--plain",
         "--text-only", "--events", "--no-journal"],
        input=b"",
        capture_output=True,
        env=env,
        timeout=120,
        check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr.decode()
    header = json.loads(proc.stdout.decode().splitlines()[0])
    assert header["type"] == "header"
    assert header["spoken"] is False
    assert "* You hung up." in proc.stderr.decode()
