"""The package version: a leaf every layer may import (nothing imports ``fishtalk/__init__``)."""

__version__ = "0.1.0"
