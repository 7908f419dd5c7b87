"""Journal commands: export, diff (compare) and the replayed session."""
