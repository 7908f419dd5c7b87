"""Import boundaries: the sans-IO core and the API client stay free of heavy dependencies.

Each module is imported in a fresh interpreter and ``sys.modules`` is inspected, so an
import pulled in by anything else in the test process cannot hide a violation.
"""

from __future__ import annotations

import importlib.util

import pytest
from support.child import loaded_modules

REQUIRED = (
    "fishtalk.core.protocol",
    "fishtalk.engine.api",
    "fishtalk.core.errors",
    "fishtalk.cli.config",
)
OPTIONAL = ("fishtalk.core.conversation", "fishtalk.engine.tools")
"""Checked when they exist (other parts of the project add them)."""
FORBIDDEN = ("textual", "livekit", "numpy", "sounddevice")
NO_ASYNCIO_REQUIRED = ("fishtalk.core.protocol",)
NO_ASYNCIO_OPTIONAL = ("fishtalk.core.conversation",)


def present(modules: tuple[str, ...]) -> list[str]:
    return [m for m in modules if importlib.util.find_spec(m) is not None]


@pytest.mark.parametrize("module", REQUIRED)
def test_required_modules_exist(module: str) -> None:
    assert importlib.util.find_spec(module) is not None


@pytest.mark.parametrize("module", [*REQUIRED, *present(OPTIONAL)])
def test_no_heavy_imports(module: str) -> None:
    loaded = loaded_modules(module)
    offenders = sorted(name for name in loaded if name.split(".")[0] in FORBIDDEN)
    assert offenders == [], f"{module} imports {', '.join(offenders)}"


@pytest.mark.parametrize("module", [*NO_ASYNCIO_REQUIRED, *present(NO_ASYNCIO_OPTIONAL)])
def test_sans_io_core_does_not_import_asyncio(module: str) -> None:
    loaded = loaded_modules(module)
    assert "asyncio" not in loaded, f"{module} imports asyncio"
