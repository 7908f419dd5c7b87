"""``fishtalk config path|show|init``: locate, show and create the config file."""

import os
from typing import TYPE_CHECKING, Annotated

import typer

from fishtalk.cli.shared import load, target_config_path

if TYPE_CHECKING:
    pass


app = typer.Typer(help="Show, locate and create the config file.")

# --- config -------------------------------------------------------------------------------


@app.command("path")
def config_path() -> None:
    """Print the config file's path (it may not exist yet)."""
    typer.echo(str(target_config_path()))


@app.command("show")
def config_show() -> None:
    """Print the effective settings as TOML (the API key is never shown)."""
    import tomli_w

    from fishtalk.cli.config import redacted_dict

    settings = load()
    path = target_config_path()
    state = "" if path.exists() else " (not found; defaults and environment only)"
    typer.echo(f"# effective settings; file: {path}{state}")
    typer.echo(tomli_w.dumps(redacted_dict(settings)).rstrip())


@app.command("init")
def config_init(
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing file.")] = False,
) -> None:
    """Write the documented example config to the config path (mode 0600)."""
    from fishtalk.core.errors import ConfigError

    path = target_config_path()
    if path.exists() and not force:
        raise ConfigError(f"{path} already exists (use --force to overwrite it)")
    text = example_config_text()
    path.parent.mkdir(parents=True, exist_ok=True)
    # Create with 0600 from the start: the file may come to hold an API key.
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.chmod(path, 0o600)
    typer.echo(f"wrote {path}")


def example_config_text() -> str:
    """The documented example config shipped inside the package."""
    from importlib.resources import files

    return files("fishtalk").joinpath("data", "config.example.toml").read_text(encoding="utf-8")
