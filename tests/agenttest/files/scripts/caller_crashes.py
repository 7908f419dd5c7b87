"""A caller that crashes."""

raise SystemExit("caller exploded: no persona")
