"""The LiveKit session engine: one call's IO (the one place outside ``audio/`` and ``sim/``
touching livekit). Split by topic:

- :mod:`.commands`: :class:`Session`, its public commands and run loop;
- :mod:`.plumbing`: the reducer plumbing every part shares, and :class:`Timeouts`;
- :mod:`.room`: SDK callbacks -> reducer inputs, connect, reconnect, teardown;
- :mod:`.outbox`: the ONE ordered publisher of client events (the only way out);
- :mod:`.media`: agent playback, the microphone publish, audio-side latency marks;
- :mod:`.grants`: where the grant comes from;
- :mod:`.result`: how a session ended (:class:`EndResult`).

Data flow: SDK callbacks and commands -> inputs -> reducer -> effects; a client event goes
reduce -> effect -> outbox -> ``publish_data``, in order. The session never picks an exit
code: :class:`EndResult` says why the call ended; the CLI edge maps that to a code.
"""

from fishtalk.engine.session.commands import Session
from fishtalk.engine.session.grants import (
    CreateSession,
    DirectJoin,
    GrantSource,
    ReadyGrant,
    Refused,
)
from fishtalk.engine.session.media import TAIL_AFTER_TEXT, AudioFactory
from fishtalk.engine.session.plumbing import (
    CONNECT_TIMEOUT,
    DEFAULT_TIMEOUTS,
    StateListener,
    Timeouts,
)
from fishtalk.engine.session.result import EndResult

__all__ = [
    "CONNECT_TIMEOUT",
    "DEFAULT_TIMEOUTS",
    "TAIL_AFTER_TEXT",
    "AudioFactory",
    "CreateSession",
    "DirectJoin",
    "EndResult",
    "GrantSource",
    "ReadyGrant",
    "Refused",
    "Session",
    "StateListener",
    "Timeouts",
]
