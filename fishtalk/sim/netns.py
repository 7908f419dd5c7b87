"""Run a command inside a private network namespace that WebRTC can use.

libwebrtc ignores loopback interfaces, so on a host whose only interface is ``lo`` (CI
machines, containers) ICE never completes. This runner gives the command a namespace of
its own with ``lo`` up plus a TAP interface (``tap0``, 10.254.0.1/24) whose file
descriptor it holds open for the whole run. No packet can leave that namespace.

Usage::

    python -m fishtalk.sim.netns [--] COMMAND [ARGS...]

The command's exit code is returned. Inside, ``FISHTALK_NETNS=1`` is set so that tests
and ``fishtalk demo`` can tell they are in a usable namespace.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import struct
import subprocess
import sys
from collections.abc import Sequence

ENV_MARK = "FISHTALK_NETNS"
TAP_NAME = "tap0"
TAP_ADDR = "10.254.0.1/24"

_TUNSETIFF = 0x400454CA
_IFF_TAP = 0x0002
_IFF_NO_PI = 0x1000


class NetnsError(RuntimeError):
    """The namespace or its interface could not be set up."""


def _open_tap(name: str) -> int:
    if sys.platform != "linux":  # network namespaces and TAP devices are Linux's alone
        raise NetnsError("network namespaces need Linux")
    fd = os.open("/dev/net/tun", os.O_RDWR)
    ifr = struct.pack("16sH", name.encode(), _IFF_TAP | _IFF_NO_PI)
    fcntl.ioctl(fd, _TUNSETIFF, ifr)
    return fd


def _ip(*args: str) -> None:
    ip = shutil.which("ip") or "/usr/sbin/ip"
    subprocess.run([ip, *args], check=True)


def _inside(cmd: Sequence[str]) -> int:
    """Set up lo + tap0 in the current (fresh) namespace, then run ``cmd``."""
    try:
        _ip("link", "set", "lo", "up")
        fd = _open_tap(TAP_NAME)
        _ip("addr", "add", TAP_ADDR, "dev", TAP_NAME)
        _ip("link", "set", TAP_NAME, "up")
    except (OSError, subprocess.CalledProcessError) as exc:
        raise NetnsError(f"could not set up {TAP_NAME} in the namespace: {exc}") from exc
    try:
        env = dict(os.environ, **{ENV_MARK: "1"})
        return subprocess.run(list(cmd), env=env, check=False).returncode
    finally:
        os.close(fd)


def in_namespace() -> bool:
    """True when this process runs inside a namespace made by this runner."""
    return os.environ.get(ENV_MARK) == "1"


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["--inside"]:
        args = args[1:]
        if args[:1] == ["--"]:
            args = args[1:]
        try:
            return _inside(args)
        except NetnsError as exc:
            print(f"fishtalk netns: {exc}", file=sys.stderr)
            return 125
    if args[:1] == ["--"]:
        args = args[1:]
    if not args:
        print("usage: python -m fishtalk.sim.netns [--] COMMAND [ARGS...]", file=sys.stderr)
        return 2
    if in_namespace():
        # Already inside one (a script calling the runner again): just run the command.
        return subprocess.run(args, check=False).returncode
    unshare = shutil.which("unshare")
    if unshare is None:
        print("fishtalk netns: 'unshare' (util-linux) is not installed", file=sys.stderr)
        return 125
    # -r maps the caller to root in a new user namespace, -n gives a new network namespace.
    inner = [unshare, "-rn", sys.executable, "-m", "fishtalk.sim.netns", "--inside", "--", *args]
    try:
        return subprocess.run(inner, check=False).returncode
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
