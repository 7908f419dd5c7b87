"""``python -m fishtalk``: the same as the ``fishtalk`` command."""

from fishtalk.cli import main

if __name__ == "__main__":
    main()
