"""The product holds no test harness: no fishtalk module imports pytest.

Every module under ``fishtalk`` (found by walking the package, so new ones are covered)
is imported in one fresh interpreter, then ``sys.modules`` is inspected.
"""

from __future__ import annotations

import json

from support.child import run_python

_PROBE = """
import importlib, json, pkgutil, sys
import fishtalk

names = ["fishtalk"]
for info in pkgutil.walk_packages(fishtalk.__path__, "fishtalk."):
    if info.name.rsplit(".", 1)[-1] != "__main__":  # running the CLI is not importing it
        names.append(info.name)
for name in names:
    importlib.import_module(name)
print(json.dumps({"imported": names, "modules": sorted(sys.modules)}))
"""

TEST_HARNESSES = ("pytest", "_pytest", "pluggy", "hypothesis")


def test_no_fishtalk_module_imports_pytest() -> None:
    done = run_python(_PROBE, timeout=120)
    assert done.returncode == 0, f"importing every fishtalk module failed:\n{done.stderr}"
    result = json.loads(done.stdout)
    imported = set(result["imported"])
    # The walk really covered the package: every layer, and the sim.
    assert {
        "fishtalk.cli.app",
        "fishtalk.core.protocol",
        "fishtalk.engine.journal.writer",
        "fishtalk.workbench.agenttest.spec",
        "fishtalk.sim.fish.agent",
        "fishtalk.sim.livekit.server",
    } <= imported
    offenders = sorted(m for m in result["modules"] if m.split(".")[0] in TEST_HARNESSES)
    assert offenders == [], f"fishtalk imports a test harness: {', '.join(offenders)}"
