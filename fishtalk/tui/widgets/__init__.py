"""Widgets of the fishtalk TUI; each renders part of ``conversation.State``."""
