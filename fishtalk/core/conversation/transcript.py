"""Transcript handlers: ``lk.transcription`` streams opening, growing and closing, chunks
that overtake their stream, and whose line each one is."""

from __future__ import annotations

from dataclasses import replace

from fishtalk.core.conversation.answers import _agent_line_started, _answering
from fishtalk.core.conversation.inputs import (
    TranscriptStreamChunk,
    TranscriptStreamClosed,
    TranscriptStreamOpened,
)
from fishtalk.core.conversation.lines import _put_segment
from fishtalk.core.conversation.state import (
    MAX_ORPHANS,
    OrphanChunk,
    Role,
    Segment,
    State,
    TranscriptStream,
)
from fishtalk.core.conversation.step import (
    _bounded,
    _ignored,
    _next_seq,
    _Step,
    _with_mode,
)


def _role_of(state: State, identity: str) -> Role:
    if state.local_identity is not None:
        return "user" if identity == state.local_identity else "agent"
    # Local identity not known yet: only the agent's identity can tell us anything.
    if state.agent_identity is not None and identity != state.agent_identity:
        return "user"
    return "agent"


def _find_stream(r: _Step, stream_id: str) -> TranscriptStream | None:
    for s in r.internal.streams:
        if s.stream_id == stream_id:
            return s
    return None


def _replace_stream(r: _Step, stream: TranscriptStream) -> None:
    streams = r.internal.streams
    r.book(streams=tuple(stream if s.stream_id == stream.stream_id else s for s in streams))


def _on_stream_opened(r: _Step, inp: TranscriptStreamOpened) -> None:
    if _find_stream(r, inp.stream_id) is not None:
        _ignored(r)
        return
    role = _role_of(r.s, inp.identity)
    stream = TranscriptStream(
        stream_id=inp.stream_id, segment_id=inp.segment_id, role=role, final=inp.final
    )
    seg = r.s.segment_log.get(inp.segment_id)
    if seg is not None and seg.role != role:
        # The same segment id from the other side: not ours to change. The stream is
        # tracked without a segment so its chunks and close are dropped quietly.
        _track_detached(r, stream, inp.at)
        return
    if seg is None:
        seg = Segment(
            seq=_next_seq(r),
            segment_id=inp.segment_id,
            role=role,
            identity=inp.identity,
            text="",
            final=False,
            open=True,
            started_at=inp.at,
            updated_at=inp.at,
            answers_turn=_answering(r) if role == "agent" else None,
        )
        if role == "agent":
            _agent_line_started(r, inp.segment_id)
        _put_segment(r, seg)
    elif role == "agent" and not seg.interrupted:
        # Another stream for the same agent segment (e.g. a preamble and its answer).
        _put_segment(r, replace(seg, open=True, final=False, updated_at=inp.at))
    elif role == "user":
        if seg.final and not inp.final:
            # A late interim after the final transcript: the final text stands.
            _track_detached(r, stream, inp.at)
            return
        _put_segment(r, replace(seg, open=True, updated_at=inp.at))
    r.book(streams=(*r.internal.streams, stream))
    _with_mode(r)
    _replay_orphans(r, inp.stream_id, inp.at)


def _track_detached(r: _Step, stream: TranscriptStream, at: float) -> None:
    r.book(streams=(*r.internal.streams, replace(stream, segment_id="")))
    _ignored(r)
    _replay_orphans(r, stream.stream_id, at)


def _replay_orphans(r: _Step, stream_id: str, at: float) -> None:
    orphans = r.internal.orphans
    if not orphans:
        return
    mine = [o for o in orphans if o.stream_id == stream_id]
    if not mine:
        return
    r.book(orphans=tuple(o for o in orphans if o.stream_id != stream_id))
    stream = _find_stream(r, stream_id)
    seg_id = stream.segment_id if stream is not None else ""
    for o in mine:
        if o.text is not None:
            _on_stream_chunk(r, TranscriptStreamChunk(stream_id, seg_id, o.text, max(o.at, at)))
        else:
            _on_stream_closed(r, TranscriptStreamClosed(stream_id, seg_id, max(o.at, at), o.final))


def _add_orphan(r: _Step, orphan: OrphanChunk) -> None:
    orphans = (*r.internal.orphans, orphan)
    r.book(orphans=orphans[_bounded(orphans, MAX_ORPHANS) :])


def _on_stream_chunk(r: _Step, inp: TranscriptStreamChunk) -> None:
    stream = _find_stream(r, inp.stream_id)
    if stream is None:
        # The chunk overtook its header: hold it until the open arrives.
        _add_orphan(r, OrphanChunk(inp.stream_id, inp.text, None, inp.at))
        return
    seg = r.s.segment_log.get(stream.segment_id) if stream.segment_id else None
    if seg is None:
        _ignored(r)
        return
    if stream.role == "agent":
        if seg.interrupted:
            # Barge-in: only what was spoken before the interrupt counts.
            debug = r.internal.debug
            r.book(debug=replace(debug, dropped_chunks=debug.dropped_chunks + 1))
            return
        seg = replace(seg, text=seg.text + inp.text, updated_at=inp.at)
    else:
        stream = replace(stream, text=stream.text + inp.text)
        _replace_stream(r, stream)
        if seg.final and not stream.final:
            # An interim stream still open when the final one landed: the final text stands.
            _ignored(r)
            return
        # Each user stream carries the whole interim text, replacing the previous one.
        seg = replace(seg, text=stream.text, updated_at=inp.at, final=seg.final or stream.final)
    _put_segment(r, seg)
    _with_mode(r)


def _on_stream_closed(r: _Step, inp: TranscriptStreamClosed) -> None:
    stream = _find_stream(r, inp.stream_id)
    if stream is None:
        _add_orphan(r, OrphanChunk(inp.stream_id, None, inp.final, inp.at))
        return
    streams = tuple(s for s in r.internal.streams if s is not stream)
    r.book(streams=streams)
    seg = r.s.segment_log.get(stream.segment_id) if stream.segment_id else None
    if seg is None:
        return
    still_open = any(s.segment_id == seg.segment_id for s in streams)
    if stream.role == "agent":
        # An agent segment closing means playout finished (or it was cut): it is done.
        seg = replace(seg, open=still_open, final=not still_open, updated_at=inp.at)
    else:
        final = seg.final or stream.final or bool(inp.final)
        text = stream.text if inp.final and not seg.final and stream.text else seg.text
        seg = replace(seg, text=text, open=still_open, final=final, updated_at=inp.at)
    _put_segment(r, seg)
    _with_mode(r)
