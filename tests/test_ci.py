"""What CI runs: the README's test command (parallel, slowest listed) and the import contracts.

The contracts themselves run in .ci/run (``lint-imports``); here they are shown to bite: a
copy of the package with one forbidden import breaks the matching contract.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _test_command() -> list[str]:
    readme = (ROOT / "README.md").read_text("utf-8")
    lines = re.findall(r"^<!-- test-command: (.*) -->$", readme, flags=re.M)
    assert len(lines) == 1, lines
    shown = readme.split(lines[0] + " -->\n```sh\n", 1)[1].split("\n```", 1)[0]
    assert shown == lines[0], "the README shows another command than the one CI runs"
    # The user-switching test runs first, outside the namespace; then the suite, without it.
    first, suite = lines[0].split(" && ")
    assert shlex.split(first)[-1] == "tests/test_non_dumpable.py"
    return shlex.split(suite)


def test_ci_runs_the_tests_in_parallel_and_lists_the_slowest() -> None:
    argv = _test_command()
    assert argv[-1] == "--ignore=tests/test_non_dumpable.py"  # it ran already, outside
    assert argv[:4] == [".venv/bin/python", "-m", "fishtalk.sim.netns", "--"]
    assert argv[4:7] == [".venv/bin/python", "-m", "pytest"]
    workers = argv[argv.index("-n") + 1]
    assert int(workers) >= 2
    assert "--durations=25" in argv
    # The real-time audio tests share one worker (tests/conftest.py groups them).
    assert argv[argv.index("--dist") + 1] == "loadgroup"


CRASHING_SUITE = """
    import os
    from pathlib import Path

    import pytest

    @pytest.mark.xdist_group("audio")
    @pytest.mark.parametrize("i", range(8))
    def test_grouped(i):
        pass

    @pytest.mark.parametrize("i", range(16))
    def test_spread(i):
        once = Path(__file__).with_name("crashed")
        if i == 3 and not once.exists():
            once.touch()
            os.abort()  # what a native library's abort does to a worker
"""


def test_a_crashed_worker_fails_the_run_at_once_and_names_the_test(tmp_path: Path) -> None:
    """With the README's pytest options a worker killed by a native abort fails the run,
    naming its test. (pytest-xdist 3.8 with ``--dist loadgroup`` otherwise starts a
    replacement and then waits forever for it at the end: CI would sit out its timeout.)"""
    argv = _test_command()
    options = argv[argv.index("pytest") + 1 :]
    (tmp_path / "pytest.ini").write_text("[pytest]\n", "utf-8")  # not the suite's config
    (tmp_path / "test_crash.py").write_text(textwrap.dedent(CRASHING_SUITE), "utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", *options, "test_crash.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=90,  # a hang is the failure this test is about
        check=False,
    )
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    assert "crashed while running 'test_crash.py::test_spread[3]'" in out, out


def test_ci_script_fails_on_any_failure_and_checks_the_contracts() -> None:
    script = (ROOT / ".ci" / "run").read_text("utf-8")
    assert "set -euo pipefail" in script
    assert re.search(r"^\.venv/bin/lint-imports$", script, flags=re.M)
    # The test command's exit code (5 when no test ran) is the script's.
    assert script.rstrip().endswith('bash -c "$test_cmd"')


def _pyproject() -> dict[str, object]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))


def test_the_tools_are_dev_dependencies() -> None:
    dev = _pyproject()["project"]["optional-dependencies"]["dev"]  # type: ignore[index]
    names = {re.split(r"[<>=!~ ]", spec, maxsplit=1)[0] for spec in dev}
    assert {"pytest-xdist", "import-linter"} <= names


def _lint_copy(tmp_path: Path, module: Path, line: str) -> subprocess.CompletedProcess[str]:
    """lint-imports on a copy of the package where ``module`` has ``line`` added."""
    shutil.copytree(
        ROOT / "fishtalk", tmp_path / "fishtalk", ignore=shutil.ignore_patterns("*.pyc")
    )
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    target = tmp_path / module
    if target.suffix != ".py":  # a module that is (or may become) a package
        target = target / "__init__.py" if target.is_dir() else target.with_suffix(".py")
    target.write_text(target.read_text("utf-8") + f"\n{line}\n", "utf-8")
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"],
        cwd=tmp_path,  # lint-imports puts its working directory first on sys.path
        env=dict(os.environ, COLUMNS="200"),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_contracts_hold_on_a_clean_copy(tmp_path: Path) -> None:
    done = _lint_copy(tmp_path, Path("fishtalk/core/errors.py"), "# nothing new")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout


@pytest.mark.parametrize(
    ("module", "line", "contract"),
    [
        ("fishtalk/core/protocol/__init__.py", "import asyncio", "core loads no"),
        ("fishtalk/core/conversation", "import textual", "core loads no"),
        ("fishtalk/core/events.py", "import numpy", "core loads no"),
        ("fishtalk/engine/api/client.py", "import fishtalk.cli.config", "one way"),
        ("fishtalk/plain/line.py", "from livekit import rtc", "front ends never touch livekit"),
        ("fishtalk/engine/session/commands.py", "import fishtalk.tui.app", "one way"),
        ("fishtalk/plain/line.py", "import fishtalk.tui.safe", "line mode never loads the TUI"),
        ("fishtalk/sim", "import fishtalk.engine.session", "only the wire protocol"),
    ],
)
def test_a_forbidden_import_breaks_its_contract(
    tmp_path: Path, module: str, line: str, contract: str
) -> None:
    done = _lint_copy(tmp_path, Path(module), line)
    assert done.returncode == 1, done.stdout + done.stderr
    broken = [ln for ln in done.stdout.splitlines() if " BROKEN" in ln]
    assert len(broken) >= 1, done.stdout
    assert any(contract in ln for ln in broken), broken


RECORD_SIGINT = """
    import importlib.util, json, os, signal

    # The hook under test, taken from the suite's own conftest.
    _spec = importlib.util.spec_from_file_location("suite_conftest", {conftest!r})
    _suite = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(_suite)
    pytest_sessionfinish = _suite.pytest_sessionfinish

    def pytest_unconfigure(config):
        if os.environ.get("PYTEST_XDIST_WORKER"):
            handler = signal.getsignal(signal.SIGINT)
            with open("sigint.json", "w") as out:
                json.dump(handler == signal.SIG_IGN, out)
"""


def test_a_worker_ignores_sigint_once_its_session_is_over(tmp_path: Path) -> None:
    """execnet's exit nudge (SIGINT after 5 s) must not land in pytest's clean-up."""
    conftest = textwrap.dedent(RECORD_SIGINT).format(conftest=str(ROOT / "tests" / "conftest.py"))
    (tmp_path / "conftest.py").write_text(conftest, "utf-8")
    (tmp_path / "test_one.py").write_text("def test_one():\n    pass\n", "utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "1", "test_one.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads((tmp_path / "sigint.json").read_text("utf-8")) is True
