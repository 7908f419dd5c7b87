"""requirements-dev.lock (what CI installs) agrees with pyproject.toml (what users get).

Every dependency and the extras CI installs (:data:`LOCKED_EXTRAS`) are pinned in the lock, with
hashes, at a version inside pyproject's range; nothing in the lock is pinned twice or unhashed.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
LOCK = ROOT / "requirements-dev.lock"
LOCKED_EXTRAS = ("dev", "speech", "interop", "load", "audio-checks")
"""The extras CI installs (the tests need them); whisper and piper stay the user's choice."""
_PIN = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)==(?P<version>\S+)")


def _declared() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]
    extras = project["optional-dependencies"]
    lines = [*project["dependencies"], *[r for extra in LOCKED_EXTRAS for r in extras[extra]]]
    return [Requirement(line) for line in lines]


def _locked() -> dict[str, tuple[Version, list[str]]]:
    """Each pinned name, its version and its hashes (a pin's continuation lines)."""
    pins: dict[str, tuple[Version, list[str]]] = {}
    name = ""
    for line in LOCK.read_text("utf-8").splitlines():
        match = _PIN.match(line)
        if match:
            name = canonicalize_name(match["name"])
            assert name not in pins, f"{name} is pinned twice"
            pins[name] = (Version(match["version"].rstrip("\\").strip()), [])
        elif line.strip().startswith("--hash=sha256:"):
            pins[name][1].append(line.strip().split(":", 1)[1].rstrip(" \\"))
    return pins


def test_every_declared_dependency_is_pinned_inside_its_range() -> None:
    pins = _locked()
    for requirement in _declared():
        name = canonicalize_name(requirement.name)
        assert name in pins, f"{requirement} is not in {LOCK.name}"
        version, _ = pins[name]
        assert requirement.specifier.contains(version, prereleases=True), (
            f"{LOCK.name} pins {name}=={version}, outside pyproject's {requirement}"
        )


def test_every_pin_has_hashes() -> None:
    pins = _locked()
    assert len(pins) > len(_declared())  # the transitive dependencies are pinned too
    for name, (_, hashes) in pins.items():
        assert hashes, f"{name} has no hash: pip's --require-hashes would refuse the lock"
        assert all(re.fullmatch(r"[0-9a-f]{64}", h) for h in hashes), name


def test_ci_installs_the_lock_with_hashes_checked() -> None:
    run = (ROOT / ".ci" / "run").read_text("utf-8")
    assert "--require-hashes --no-deps -r requirements-dev.lock" in run
    assert "pip install -q --no-deps -e ." in run
