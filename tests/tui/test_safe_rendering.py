"""Hostile strings from the network are shown literally and never break the layout."""

from __future__ import annotations

import unicodedata

from hypothesis import given
from hypothesis import strategies as st
from support.scripted import ScriptedSession

from fishtalk.core import conversation as c
from fishtalk.tui.safe import pretty_payload, safe_text, visible
from fishtalk.tui.widgets.tools import ToolPanel, render_card
from fishtalk.tui.widgets.transcript import Transcript, render_segment

from .helpers import agent_says, connected, drawn, make_app, tool_failed, tool_started

MARKUP = "[bold red]x[/] [link=https://evil.example]click[/link] [@click=app.quit]q[/]"
ANSI = "\x1b[31mred\x1b[0m \x1b]0;pwned\x07 \x1b[2J\x1b[H"
CONTROL = "bell\x07 back\x08 nul\x00 cr\rover del\x7f c1\x9b"
LONG = "A" * 5000
EMOJI = "family 👩‍👩‍👧‍👦 flag 🇫🇷 thumbs 👍🏽"
COMBINING = "e\u0301 n\u0303 Z\u0336\u0335a\u0337"
RTL = "مرحبا بالعالم שלום"
BIDI = "abc\u202edcba\u202c end"
HOSTILE = [MARKUP, ANSI, CONTROL, LONG, EMOJI, COMBINING, RTL, BIDI]


def _no_controls(text: str) -> bool:
    return not any(unicodedata.category(ch) == "Cc" and ch != "\n" for ch in text)


def test_markup_is_literal() -> None:
    text = safe_text(MARKUP)
    assert text.plain == MARKUP
    assert text.spans == []


def test_escapes_and_controls_are_visible() -> None:
    assert visible(ANSI).startswith("␛[31mred␛[0m ␛]0;pwned␇")
    assert _no_controls(visible(ANSI))
    shown = visible(CONTROL)
    assert _no_controls(shown)
    for picture in ("␇", "␈", "␀", "␍", "␡", "<U+009B>"):
        assert picture in shown


def test_bidi_overrides_are_shown_as_code_points() -> None:
    assert visible(BIDI) == "abc<U+202E>dcba<U+202C> end"


def test_printable_unicode_is_untouched() -> None:
    for value in (EMOJI, COMBINING, RTL):
        assert visible(value) == value


@given(st.text())
def test_clean_never_leaves_a_control_character(value: str) -> None:
    assert _no_controls(visible(value))


def test_pretty_payload_handles_non_json_and_deep_json() -> None:
    assert pretty_payload('{"a": [1, 2]}') == '{\n  "a": [\n    1,\n    2\n  ]\n}'
    assert pretty_payload('{"a": "trunc') == '{"a": "trunc'
    assert pretty_payload("[" * 100_000) == "[" * 100_000
    assert pretty_payload(None) == ""


def test_segment_and_card_render_literally() -> None:
    for value in HOSTILE:
        seg = c.Segment(1, "s", "agent", "agent", value, final=True)
        assert render_segment(seg).plain == "agent ▸ " + visible(value)
        card = c.ToolCard(
            seq=1,
            call_id="x",
            tool_name=value[:64],
            source=value[:20],
            status="failed",
            input=value,
            output=value,
            error=value,
        )
        plain = render_card(card, 0.0, expanded=True).plain
        assert _no_controls(plain)
        assert visible(value) in plain


async def test_hostile_strings_in_the_running_app() -> None:
    session = ScriptedSession()
    app = make_app(session)
    async with app.run_test(size=(80, 24)) as pilot:
        session.feed(*connected())
        for i, value in enumerate(HOSTILE):
            session.feed(*agent_says(f"h{i}", [value], 2.0 + i))
            session.feed(tool_started(f"t{i}", f"tool{i}", 3.0, input=value))
            session.feed(tool_failed(f"t{i}", f"tool{i}", 3.5, error=value, output=value))
        session.feed(c.AddNotice(MARKUP + ANSI, 20.0))
        await drawn(pilot, session)
        transcript = app.query_one(Transcript)
        assert transcript.plain_items() == ["agent ▸ " + visible(v) for v in HOSTILE]
        lines = transcript.text_lines()
        width = transcript.scrollable_content_region.width
        assert all(len(line) <= width for line in lines)
        assert any("[bold red]x[/]" in line for line in lines)
        assert len(app.query_one(ToolPanel).card_views) == len(HOSTILE)
        # Nothing hostile reached the screen: every visible cell is printable.
        for pane in (app.query_one(Transcript), app.query_one(ToolPanel)):
            pane.scroll_end(animate=False)
        await pilot.pause()
        screen_text = "\n".join(strip.text for strip in app.screen._compositor.render_strips())
        assert "\x1b" not in screen_text
        assert _no_controls(screen_text)
        assert app.screen.size == (80, 24)
        assert app.is_running  # no markup action (app.quit) ran
