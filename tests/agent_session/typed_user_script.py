"""A user's script, type-checked with ``mypy --strict`` by test_api_surface (never run).

It uses the Python API the way the README shows, so a signature that loses its types (or
a name that stops being exported) fails that test.
"""

from __future__ import annotations

import asyncio

from pydantic import JsonValue

from fishtalk import AgentSession, AudioDevices, SessionEndedError, ToolContext, events
from fishtalk.core.errors import SessionApiError


def get_time(params: dict[str, JsonValue], ctx: ToolContext) -> dict[str, str]:
    return {"time": "12:00", "call": ctx.call_id, "tool": ctx.tool_name}


async def lookup(params: dict[str, JsonValue], ctx: ToolContext) -> list[int]:
    await asyncio.sleep(0)
    return [1, 2, 3]


def on_final(event: events.SegmentFinalised) -> None:
    segment: events.Segment = event.segment
    print(segment.role, segment.text, segment.final, segment.interrupted)


async def main() -> int:
    session = AgentSession(
        agent_id="agent",
        api_url="http://127.0.0.1:1",
        dynamic_variables={"name": "Ada", "age": 36},
        overrides={"language": "en"},
        text_only=True,
        audio=AudioDevices(input="default", output=None),
        client_tools={"get_time": get_time, "lookup": lookup},
    )
    remove = session.on(events.SegmentFinalised, on_final)
    session.on("error", lambda event: print(event))
    try:
        async with session:
            sent: events.Segment = await session.send_text("hi", audio=False)
            reply: events.Segment = await session.wait_for_reply(timeout=10.0)
            print(sent.text, reply.text)
            hit: events.Event = await session.wait_for(
                lambda e: isinstance(e, events.ModeChanged) and e.mode == "listening", 5.0
            )
            print(hit.kind, session.state.status, session.status, session.mode)
            session.activity()
            session.interrupt()
            session.mute()
            session.unmute()
            async for event in session.events():
                print(event.to_dict())
                if isinstance(event, events.Ended):
                    print(event.reason)
            result = await session.hangup()
            print(result.reason, [s.text for s in session.transcript])
    except SessionEndedError as exc:
        print(exc.reason)
        return 1
    except SessionApiError as exc:
        print(exc)
        return 2
    finally:
        remove()
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
