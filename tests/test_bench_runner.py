"""bench/run.py: which sections of BENCHMARKS.md a run keeps."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]


def _runner() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_run", ROOT / "bench" / "run.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


EXISTING = (
    "<!-- bench:session -->\n## session\nold session\n<!-- /bench:session -->\n"
    "<!-- bench:sim -->\n## sim\nold sim\n<!-- /bench:sim -->\n"
    "<!-- bench:overview -->\n## overview\nwritten by hand\n<!-- /bench:overview -->\n"
)


def test_a_full_run_keeps_only_the_hand_written_sections_and_puts_them_first() -> None:
    run = _runner()
    text = run.render(
        [run.Result("session", "## session\nnew session\n", True, 1.0)], EXISTING, full=True
    )
    assert "written by hand" in text
    assert "new session" in text
    assert "old session" not in text
    assert "old sim" not in text  # a benchmark that was not re-run
    assert text.index("overview") < text.index("new session")


def test_a_partial_run_replaces_only_what_it_ran() -> None:
    run = _runner()
    text = run.render([run.Result("session", "## session\nnew session\n", True, 1.0)], EXISTING)
    assert "written by hand" in text
    assert "old sim" in text
    assert "new session" in text
    assert "old session" not in text
