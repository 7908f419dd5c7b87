"""The locustfile fishtalk ships: ``fishtalk load`` runs it, and so does plain Locust::

    locust -f "$(python -c 'import fishtalk.workbench.load.locustfile as m; print(m.__file__)')" \\
        --fishtalk-test FILE.toml --fishtalk-agent ID --run-time 5m --users 10

Locust patches the standard library with gevent when it is imported, unless
``LOCUST_SKIP_MONKEY_PATCH`` is set. The engine must run on the standard library's own
sockets, locks and selectors (see :mod:`.bridge`), so when the ``locust`` command loaded
this file after patching, it runs the same command again with the variable set (the
``os.execv`` below, before Locust has started anything); then it makes ``time.sleep``
yield to the hub on Locust's thread only (:func:`~.bridge.hub_aware_sleep`).
"""

import os
import sys

if "locust" in sys.modules and not os.environ.get("LOCUST_SKIP_MONKEY_PATCH"):
    if os.path.basename(sys.argv[0]) not in ("locust", "__main__.py"):
        raise ImportError(
            "fishtalk's locustfile needs Locust without monkey-patching: "
            "set LOCUST_SKIP_MONKEY_PATCH=1 before Locust is imported"
        )
    os.environ["LOCUST_SKIP_MONKEY_PATCH"] = "1"
    os.execv(sys.executable, [sys.executable, "-m", "locust", *sys.argv[1:]])  # noqa: S606
# Imported before Locust (by another locustfile, or a script): keep Locust from patching.
os.environ.setdefault("LOCUST_SKIP_MONKEY_PATCH", "1")

from fishtalk.workbench.load.bridge import hub_aware_sleep
from fishtalk.workbench.load.user import FishtalkUser

hub_aware_sleep()

__all__ = ["FishtalkUser"]
