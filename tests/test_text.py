"""fishtalk.core.text: the one rule set for text that reaches a terminal, and every old copy of it
now being a user of it."""

from __future__ import annotations

import json
import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fishtalk.core import text
from fishtalk.core.text import json_escape, make_visible, strip

# The union of what any of the five former copies guarded against (tui/safe.py, plain.py,
# api.py, tools/approval.py, cli.py), written out here independently of the module.
UNION: frozenset[int] = frozenset(
    [
        *range(0x00, 0x20),  # C0
        0x7F,  # DEL
        *range(0x80, 0xA0),  # C1
        *range(0x202A, 0x202F),  # bidi embeddings and overrides
        *range(0x2066, 0x206A),  # bidi isolates
        0x200E,  # LRM
        0x200F,  # RLM
        0x061C,  # ALM
        *range(0xFFF9, 0xFFFC),  # interlinear annotations
        *range(0xD800, 0xE000),  # (lone) surrogates
    ]
)
NEWLINE = ord("\n")

_all_chars = st.characters(exclude_categories=())  # surrogates included
_dangerous = st.sampled_from(sorted(chr(c) for c in UNION))
_piece = st.one_of(_all_chars, _dangerous, st.sampled_from(["\x1b[", "\x1b]0;", "\x1b[2J"]))
hostile = st.lists(_piece).map("".join)
_safe_chars = st.characters(exclude_categories=()).filter(lambda ch: ord(ch) not in UNION)
safe = st.text(_safe_chars)
safe_lines = st.text(st.one_of(_safe_chars, st.just("\n")))


def _bad(out: str, *, newline_ok: bool) -> list[str]:
    return [
        f"U+{ord(ch):04X}"
        for ch in out
        if ord(ch) in UNION and not (newline_ok and ord(ch) == NEWLINE)
    ]


@given(hostile)
def test_no_output_carries_a_dangerous_code_point(value: str) -> None:
    assert _bad(strip(value), newline_ok=False) == []
    assert _bad(make_visible(value, multiline=False), newline_ok=False) == []
    assert _bad(strip(value, multiline=True), newline_ok=True) == []
    assert _bad(make_visible(value), newline_ok=True) == []
    dumped = json.dumps({"k": [value]}, ensure_ascii=False, indent=2)
    assert _bad(json_escape(dumped), newline_ok=True) == []


@given(safe)
def test_safe_text_passes_through_unchanged(value: str) -> None:
    for out in (strip(value), make_visible(value, multiline=False), json_escape(value)):
        assert out == value
    dumped = json.dumps({"k": [value]}, ensure_ascii=False, indent=2)
    assert json_escape(dumped) == dumped


@given(safe_lines)
def test_safe_multiline_text_passes_through_unchanged(value: str) -> None:
    assert strip(value, multiline=True) == value
    assert make_visible(value) == value


@pytest.mark.parametrize("code", sorted(UNION))
def test_the_module_guards_exactly_the_union(code: int) -> None:
    assert text.is_dangerous(chr(code))


def test_neighbours_of_the_ranges_are_not_dangerous() -> None:
    for code in (0x20, 0x7E, 0xA0, 0x061B, 0x200D, 0x2029, 0x202F, 0x2065, 0x206A, 0xFFFC):
        assert not text.is_dangerous(chr(code)), hex(code)


@given(st.recursive(st.none() | st.text(st.one_of(_all_chars, _dangerous)), st.lists))
def test_json_escape_keeps_the_json(value: object) -> None:
    for indent in (None, 2):
        dumped = json.dumps(value, ensure_ascii=False, indent=indent)
        assert json.loads(json_escape(dumped)) == value


# --- the assertions of the old helpers' tests, now on the shared module -----------------
# (from tests/plain/test_plain_render.py::test_clean_strips_escapes_and_controls)


def test_strip_removes_escapes_and_controls() -> None:
    nasty = (
        "a\x1b[31mred\x1b[0m b\x1b]0;title\x07c \x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\ "
        "d\x9b2Je\x07f\rg\nh\u202eevil\x00"
    )
    out = strip(nasty)
    assert "\x1b" not in out
    assert "\x9b" not in out
    assert all(ch.isprintable() for ch in out)
    assert "red" in out
    assert "link" in out
    assert "title" not in out
    assert "evil" in out


# (from tests/tui/test_safe_rendering.py)
ANSI = "\x1b[31mred\x1b[0m \x1b]0;pwned\x07 \x1b[2J\x1b[H"
CONTROL = "bell\x07 back\x08 nul\x00 cr\rover del\x7f c1\x9b"
EMOJI = "family 👩‍👩‍👧‍👦 flag 🇫🇷 thumbs 👍🏽"
COMBINING = "e\u0301 n\u0303 Z\u0336\u0335a\u0337"
RTL = "مرحبا بالعالم שלום"
BIDI = "abc\u202edcba\u202c end"


def _no_controls(value: str) -> bool:
    return not any(unicodedata.category(ch) == "Cc" and ch != "\n" for ch in value)


def test_escapes_and_controls_are_visible() -> None:
    assert make_visible(ANSI).startswith("␛[31mred␛[0m ␛]0;pwned␇")
    assert _no_controls(make_visible(ANSI))
    shown = make_visible(CONTROL)
    assert _no_controls(shown)
    for picture in ("␇", "␈", "␀", "␍", "␡", "<U+009B>"):
        assert picture in shown


def test_bidi_overrides_are_shown_as_code_points() -> None:
    assert make_visible(BIDI) == "abc<U+202E>dcba<U+202C> end"


def test_printable_unicode_is_untouched() -> None:
    for value in (EMOJI, COMBINING, RTL):
        assert make_visible(value) == value
        assert strip(value) == value


@given(st.text())
def test_make_visible_never_leaves_a_control_character(value: str) -> None:
    assert _no_controls(make_visible(value))


# (from the old tools/approval.py and api.py copies: C0/C1 became spaces, on one line)


def test_strip_gives_one_line_unless_asked() -> None:
    assert strip("a\nb\r\nc\td") == "a b  c    d"
    assert strip("a\nb\r\nc", multiline=True) == "a\nb\nc"
    assert make_visible("a\nb", multiline=False) == "a␊b"


def test_the_new_cases_each_old_copy_missed() -> None:
    assert strip("x\u061cy\ufff9z\ud800") == "x y z "
    assert make_visible("x\u061cy\ufffbz\udfff") == "x<U+061C>y<U+FFFB>z<U+DFFF>"


# --- every former copy is now a user of the module -------------------------------------


def test_every_path_to_the_terminal_uses_the_shared_rules() -> None:
    from fishtalk.engine.api.errors import clean as api_clean
    from fishtalk.engine.tools.approval import params_preview, printable
    from fishtalk.plain import render as plain
    from fishtalk.tui.safe import visible as tui_visible

    hostile_value = "a\u061cb\ufff9c\u2066d\x1b[2Je\x85f\ud800g"
    for one_line in (plain.stripped, printable, api_clean):
        out = one_line(hostile_value)
        assert _bad(out, newline_ok=False) == [], one_line
        assert out.replace(" ", "") == "abcdefg"
    assert tui_visible(hostile_value) == make_visible(hostile_value)
    assert _bad(params_preview({"k": hostile_value}), newline_ok=False) == []


def test_no_other_module_keeps_its_own_control_character_class() -> None:
    from pathlib import Path

    root = Path(text.__file__).parent
    offenders = [
        str(path.relative_to(root))
        for path in root.rglob("*.py")
        if path.name != "text.py"
        and any(
            marker in path.read_text(encoding="utf-8")
            for marker in (r"\x00-\x1f", r"\x7f-\x9f", r"\u202a", r"\u2066", r"\x00-\x08")
        )
    ]
    assert offenders == []
