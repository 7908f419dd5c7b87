"""Screens of the fishtalk TUI (help, ended)."""
