"""``fishtalk load``: agent test files as Locust users (see the README, "Load testing").

* :mod:`.bridge`: the engine's own asyncio loop on a real OS thread, and the hand-off of its
  results to Locust's gevent greenlets.
* :mod:`.plan`: the guards (the worst-case session count, ``--max-sessions``, the
  confirmation line), pure.
* :mod:`.requests`: one session's result as Locust requests (turns, session start), pure.
* :mod:`.csvfinal`: Locust's CSV reports written once more as they close (the sessions
  that finish during the shutdown included).
* :mod:`.user`: the Locust user that runs a test file's conversation, and its options.
* :mod:`.locustfile`: the locustfile fishtalk ships (``fishtalk load`` runs it; so does
  plain ``locust -f``).

Importing this package is light; Locust and gevent load with :mod:`.user`.
"""
