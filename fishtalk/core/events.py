"""The events of a conversation: one vocabulary for the Python API, ``--events`` and the
journal.

These are the typed events :func:`fishtalk.core.conversation.changes` yields (defined once, in
:mod:`fishtalk.core.conversation.changes`), re-exported here for users of
:class:`fishtalk.AgentSession`. Each is a frozen dataclass with a ``type`` field (a stable
snake_case literal, also on the class as ``kind``) and an ``at`` field (seconds on the
session's monotonic clock: when the reducer input that caused it came). ``to_dict()`` /
``to_json()`` give plain JSON and :func:`event_from_dict` / :func:`event_from_json` read it
back to an equal event; :data:`SCHEMA_VERSION` is bumped when a field changes incompatibly.

========================  ==================================  ================================
type                      class                               web SDK
========================  ==================================  ================================
``status_change``         :class:`StatusChanged`              statusChange (connect/connected,
                                                              reconnecting, ended)
``mode_change``           :class:`ModeChanged`                modeChange
``agent_state_change``    :class:`AgentStateChanged`          (the agent's ``lk.agent.state``)
``muted_change``          :class:`MutedChanged`
``spoken_change``         :class:`SpokenChanged`
``segment_opened``        :class:`SegmentOpened`              (a transcript line began)
``segment_grew``          :class:`SegmentGrew`                agentResponseDelta
``interim_replaced``      :class:`InterimReplaced`            userTranscript (final: false)
``segment_finalised``     :class:`SegmentFinalised`           userTranscript (final) /
                                                              agentResponse
``segment_interrupted``   :class:`SegmentInterrupted`         (the reply was cut short)
``message_sent``          :class:`MessageSent`                message (role user, typed)
``tool_card_added``       :class:`ToolCardAdded`              toolCallStarted
``tool_card_changed``     :class:`ToolCardChanged`            toolCallCompleted / Failed; the
                                                              client tool call
                                                              (``client_call``) and its local
                                                              result (``client_result``)
``error``                 :class:`ErrorAdded`                 error (``error.code``: the web
                                                              SDK's codes)
``notice``                :class:`NoticeAdded`                (informational)
``turn_latency``          :class:`TurnLatency`                (a turn's heard latency was
                                                              measured: ``waterfall``)
``interrupt_latency``     :class:`InterruptLatency`           (an interrupt's timing:
                                                              ``interrupt``)
``reply_audio``           :class:`ReplyAudio`                 (how a reply sounded, once its
                                                              audio was over: ``report``;
                                                              with ``reply_audio=True``)
``ended``                 :class:`Ended`                      disconnect{reason}; always last
========================  ==================================  ================================

The transcript line of an event (``event.segment``) is a
:class:`~fishtalk.core.conversation.Segment`: ``role``, ``segment_id``, ``text``, ``final``,
``interrupted``. A tool card (``event.card``) is a :class:`~fishtalk.core.conversation.ToolCard`;
its ``client`` (a :class:`~fishtalk.core.conversation.ClientCall`) is set when the agent asked
this client to run the tool, with the local outcome in ``client.status``.

A turn's latency (``event.waterfall``) is a :class:`~fishtalk.core.conversation.Waterfall`:
``heard`` (seconds, or ``None`` with ``incomplete`` saying why), ``first_text``,
``client_share``, ``rtt`` and every mark on the session clock; an interrupt's
(``event.interrupt``) is an :class:`~fishtalk.core.conversation.InterruptTiming`.
:func:`~fishtalk.core.conversation.note` words either in one line. A reply's audio
(``event.report``) is a :class:`~fishtalk.core.conversation.reply_audio.ReplyAudioReport`;
:func:`~fishtalk.core.conversation.reply_audio.problems` words what is wrong with it.
"""

from __future__ import annotations

from typing import Final

from fishtalk.core.conversation import (
    CHANGE_TYPES,
    SCHEMA_VERSION,
    AgentStateChanged,
    Change,
    ClientCall,
    Ended,
    ErrorAdded,
    ErrorEntry,
    InterimReplaced,
    InterruptLatency,
    InterruptTiming,
    MessageSent,
    ModeChanged,
    MutedChanged,
    Notice,
    NoticeAdded,
    ReplyAudio,
    ReplyAudioReport,
    Segment,
    SegmentFinalised,
    SegmentGrew,
    SegmentInterrupted,
    SegmentOpened,
    SpokenChanged,
    StatusChanged,
    ToolCard,
    ToolCardAdded,
    ToolCardChanged,
    TurnLatency,
    Waterfall,
)
from fishtalk.core.conversation.changes import event_from_dict, event_from_json

Event = Change
"""Any event (a union of the classes below)."""

KINDS: Final[frozenset[str]] = frozenset(t.kind for t in CHANGE_TYPES)
"""Every event ``type`` name (``status_change``, ``segment_finalised``, ``ended``, ...)."""

EVENT_TYPES: Final = CHANGE_TYPES
"""Every event class, in the order of the table above."""

__all__ = [
    "EVENT_TYPES",
    "KINDS",
    "SCHEMA_VERSION",
    "AgentStateChanged",
    "ClientCall",
    "Ended",
    "ErrorAdded",
    "ErrorEntry",
    "Event",
    "InterimReplaced",
    "InterruptLatency",
    "InterruptTiming",
    "MessageSent",
    "ModeChanged",
    "MutedChanged",
    "Notice",
    "NoticeAdded",
    "ReplyAudio",
    "ReplyAudioReport",
    "Segment",
    "SegmentFinalised",
    "SegmentGrew",
    "SegmentInterrupted",
    "SegmentOpened",
    "SpokenChanged",
    "StatusChanged",
    "ToolCard",
    "ToolCardAdded",
    "ToolCardChanged",
    "TurnLatency",
    "Waterfall",
    "event_from_dict",
    "event_from_json",
]
