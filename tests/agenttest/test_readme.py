"""The README's "Testing your agent" example runs against the sim, as the README says."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import EXAMPLES, ROOT, SUPPORT_SCENARIO


def readme_section() -> str:
    text = (ROOT / "README.md").read_text("utf-8")
    start = text.index("\n## Testing your agent\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def readme_example() -> str:
    """The first ```toml block of the section."""
    found = re.search(r"```toml\n(.*?)```", readme_section(), flags=re.DOTALL)
    assert found is not None
    return found.group(1)


def test_readme_shows_sim_first() -> None:
    section = readme_section()
    commands = re.findall(r"^fishtalk test .*$", section, flags=re.MULTILINE)
    assert commands, section
    assert "--sim" in commands[0]


@pytest.mark.webrtc
def test_readme_example_passes_against_the_sim(tmp_path: Path) -> None:
    path = tmp_path / "support.toml"
    path.write_text(readme_example(), "utf-8")
    shutil.copy(EXAMPLES / "question.wav", tmp_path / "question.wav")
    done = subprocess.run(
        [sys.executable, "-m", "fishtalk", "test", str(path), "--sim",
         "--scenario", str(SUPPORT_SCENARIO)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "PASS support: order status" in done.stdout
