"""A command tool cannot read the API key from fishtalk's ``/proc/<pid>/environ`` (Linux).

Root may read any process's environment, so the check runs fishtalk as an unprivileged
user (created here when missing, as CI runs as root): a process holding the key in its
environment builds an ``AgentSession`` (which makes the process non-dumpable, as the CLI
does at start), then starts a child that tries to read its parent's environ. The same
script without the ``AgentSession`` shows the child could read it otherwise.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
USER = "fishtalk-nodump"

SCRIPT = """
import os, subprocess, sys
if sys.argv[1] == "session":
    from fishtalk import AgentSession
    AgentSession(agent_id="a", api_key=os.environ["FISH_API_KEY"], text_only=True)
child = (
    "import os\\n"
    "try:\\n"
    "    text = open(f'/proc/{os.getppid()}/environ', 'rb').read()\\n"
    "    print('read', b'sk-secret' in text)\\n"
    "except PermissionError:\\n"
    "    print('denied')\\n"
)
done = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True)
print(done.stdout.strip() or done.stderr.strip())
"""

pytestmark = pytest.mark.skipif(
    sys.platform != "linux" or os.geteuid() != 0 or shutil.which("setpriv") is None,
    reason="needs Linux, root (to create and become an unprivileged user) and setpriv",
)


def _user() -> pwd.struct_passwd:
    try:
        return pwd.getpwnam(USER)
    except KeyError:
        subprocess.run(
            ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", USER],
            check=True,
        )
        return pwd.getpwnam(USER)


def _as(user: pwd.struct_passwd) -> list[str]:
    return ["setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--clear-groups"]


def _python(user: pwd.struct_passwd) -> str:
    """This interpreter, or the system's of the same minor version when the user may not
    run this one (a venv over an interpreter in root's home); the venv's packages come
    in through PYTHONPATH either way."""
    minor = f"python{sys.version_info.major}.{sys.version_info.minor}"
    for candidate in (sys.executable, shutil.which(minor, path="/usr/local/bin:/usr/bin")):
        if not candidate:
            continue
        probe = [
            *_as(user),
            candidate,
            "-c",
            "import subprocess, sys; subprocess.run([sys.executable, '-c', ''], check=True)",
        ]
        if subprocess.run(probe, capture_output=True, check=False).returncode == 0:
            return candidate
    pytest.fail(
        f"{USER} can run no {minor}: run this file as root outside the network namespace "
        "(its user namespace maps no other uid; the README's test command does so)"
    )


def _run_as_user(mode: str) -> str:
    user = _user()
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": "/tmp",
        "PYTHONPATH": os.pathsep.join([str(ROOT), *sys.path]),
        "PYTHONDONTWRITEBYTECODE": "1",
        "FISH_API_KEY": "sk-secret",
    }
    argv = [
        *_as(user),
        "--",
        _python(user),
        "-c",
        textwrap.dedent(SCRIPT),
        mode,
    ]
    done = subprocess.run(
        argv, env=env, cwd="/tmp", capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_a_child_cannot_read_the_environ_of_a_process_holding_the_key() -> None:
    assert _run_as_user("session") == "denied"


def test_without_it_the_child_could() -> None:
    assert _run_as_user("plain") == "read True"
