"""Where fishtalk keeps its files on this machine (platformdirs locations).

Every location is computed when asked for, not at import time, so tests (and users) can
redirect them with the usual environment variables (``XDG_CONFIG_HOME`` and friends).
``FISHTALK_CONFIG`` names a config file explicitly and wins over the platform default.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Final

import platformdirs

APP_NAME: Final = "fishtalk"
CONFIG_FILE_NAME: Final = "config.toml"
CONFIG_PATH_ENV: Final = "FISHTALK_CONFIG"
"""Environment variable naming the config file (the ``--config`` flag still wins)."""


def config_dir() -> Path:
    """The user config directory, e.g. ``~/.config/fishtalk`` on Linux."""
    return platformdirs.user_config_path(APP_NAME, appauthor=False)


def default_config_file() -> Path:
    """The platform's user config file, ignoring ``FISHTALK_CONFIG``."""
    return config_dir() / CONFIG_FILE_NAME


def config_file() -> Path:
    """The config file fishtalk reads when no ``--config`` flag is given."""
    explicit = os.environ.get(CONFIG_PATH_ENV)
    if explicit:
        return Path(explicit).expanduser()
    return default_config_file()


def log_dir() -> Path:
    """Directory for debug logs, e.g. ``~/.local/state/fishtalk/log`` on Linux."""
    return platformdirs.user_log_path(APP_NAME, appauthor=False)


def transcript_dir() -> Path:
    """Directory for saved conversation transcripts."""
    return platformdirs.user_data_path(APP_NAME, appauthor=False) / "transcripts"


def state_dir() -> Path:
    """The user state directory, e.g. ``~/.local/state/fishtalk`` on Linux."""
    return platformdirs.user_state_path(APP_NAME, appauthor=False)


def journal_dir() -> Path:
    """Directory for session journals (``<state_dir>/journal``)."""
    return state_dir() / "journal"


def cache_dir() -> Path:
    """The user cache directory, e.g. ``~/.cache/fishtalk`` on Linux (safe to delete)."""
    return platformdirs.user_cache_path(APP_NAME, appauthor=False)


def speech_cache_dir() -> Path:
    """Where synthesised test speech is kept, by text and voice (``<cache_dir>/speech``)."""
    return cache_dir() / "speech"
