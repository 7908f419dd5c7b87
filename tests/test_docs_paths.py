"""What the README, the example config and the design notes tell a reader to open exists.

A path in backticks under one of the repository's own folders (``bench/``, ``tests/``,
``fishtalk/``, ``examples/``, ``docs/``) must name a file or folder of this checkout: the
README once sent readers to a ``bench/load_capacity.py`` that never existed.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ("README.md", "config.example.toml", "BENCHMARKS.md", "fishtalk/data/config.example.toml")
PATH = re.compile(r"`((?:bench|tests|fishtalk|examples|docs)/[\w./-]*[\w/])`")
"""A repository path in backticks (a glob or a placeholder has other characters)."""


def _paths(doc: str) -> list[str]:
    return sorted(set(PATH.findall((ROOT / doc).read_text("utf-8"))))


def test_the_docs_name_paths() -> None:
    assert "bench/bench_load.py" in _paths("README.md")


@pytest.mark.parametrize("doc", [d for d in DOCS if (ROOT / d).exists()])
def test_every_path_a_doc_names_exists(doc: str) -> None:
    missing = [path for path in _paths(doc) if not (ROOT / path).exists()]
    assert missing == [], f"{doc} names paths that do not exist"
