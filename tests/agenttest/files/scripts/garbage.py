"""Prints what no caller or judge may print: bytes that are not UTF-8, with a NUL."""

import sys

sys.stdout.buffer.write(b"\xff\xfe\x00junk\n")
