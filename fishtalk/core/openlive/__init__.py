"""OpenLive's live WebSocket protocol, modelled once, sans-IO (no asyncio, no IO).

OpenLive is a thick-client design: the server is a thin LLM proxy on one WebSocket and the
client runs VAD, STT and TTS itself. Text frames carry ``{"t": ...}`` JSON objects; the
server wraps its chat SSE events in ``{"t": "sse", "event": {"type": ...}}``; the client's
one binary frame is a JPEG behind a 1-byte tag. The contract is the spec page
(``spec/openlive-wire-protocol.md``); the facts beyond it come from the public repository's
schema (``packages/shared/src/live-events.ts`` and ``sse-events.ts``).

What this version does with each message:

Server -> client

==========================  ===========  ====================================================
``sse``: ``text_delta``,    supported    the page's SSE events (modelled in :mod:`.server`)
``reasoning_delta``,
``tool_start``,
``tool_done``, ``todos``,
``usage``, ``done``
``sse``: ``status``,        supported    repository-only SSE events; ``status`` "ready" is how
``error``                                the server says it can take a turn, ``error`` a
                                         failed turn: both fit a terminal as a status line
``need_frame``              supported    on the page
``tool_bridge``             supported    on the page; the repository's op set is open here:
                                         ``clipboard_*``/``open_url`` fit a terminal, the
                                         ``flow_*`` ops (desktop Flow) get an error result
``permission``,             supported    repository-only: a coding agent's ask fits a
``permission_resolved``                  terminal's approval dialog, like Fish's tools
``error``                   supported    repository-only: one line, as the SSE ``error``
``agent_meta``,             tolerated    repository-only: model/mode pickers and agent
``bound_state``,                         binding belong to the desktop's coding-agent UI;
``reload_history``                       received as :class:`ToleratedServerMessage`
``elicitation``,            tolerated    repository-only: login URLs and ACP forms need a
``elicitation_resolved``                 UI fishtalk does not have yet (the server times
                                         the ask out)
``modal_voice_answer``      tolerated    repository-only: a raced spoken answer to a modal
                                         the desktop shows; fishtalk answers by key
``flow``                    tolerated    repository-only: Flow is the desktop's ambient mode
                                         (foreground window, text insertion); fishtalk
                                         never starts a Flow turn, so none should come
anything else               reported     :class:`UnknownServerMessage`, never an error
==========================  ===========  ====================================================

Client -> server

==========================  ===========  ====================================================
``user_text``, ``cancel``   supported    on the page; ``cancel`` carries ``spoken``
``frame_response``          supported    on the page; the JPEG follows as binary ``0x02``
``session_config``,         supported    on the page (the repository has since dropped
``observe``                              them: a current server ignores or rejects them, so
                                         fishtalk sends them only when asked to)
``tool_bridge_result``,     supported    repository-only: the answers to supported asks
``permission_response``
``control``                 supported    repository-only: ``end`` when the user hangs up;
                                         the camera/screen actions are modelled, never sent
``bind``, ``set_model``,    ignored      repository-only: binding a coding agent and its
``set_mode``,                            model/mode/options is the desktop's setup UI; not
``set_option``                           modelled, never sent
``elicitation_response``    ignored      elicitations are only tolerated (above)
``flow_text``,              ignored      Flow (above) is not a terminal mode
``flow_cancel``,
``flow_resume``,
``flow_new``
==========================  ===========  ====================================================

Unknown fields on any message are kept in ``extra_fields`` and reported, never errors.
"""

from __future__ import annotations

from fishtalk.core.openlive import client, codec, server
from fishtalk.core.openlive.client import *  # noqa: F403  (the package re-exports them)
from fishtalk.core.openlive.codec import *  # noqa: F403
from fishtalk.core.openlive.server import *  # noqa: F403

__all__ = [*client.__all__, *codec.__all__, *server.__all__]
