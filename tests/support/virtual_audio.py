"""A headless PulseAudio server with virtual devices, for tests and benchmarks.

PortAudio on Debian reaches PulseAudio through ALSA's pulse plugin, so a private server
with a null sink as the speaker and a remapped null-sink monitor as the microphone lets
the real capture/playback code run on a machine without a sound card.

Devices (names as PulseAudio and as ALSA PCMs, listed by PortAudio):

- ``fishtalk_speaker``: the virtual speaker (default sink); its monitor
  ``fishtalk_speaker_monitor`` records what was played.
- ``fishtalk_mic_feed``: a sink; whatever is played into it comes out of the mic.
- ``fishtalk_mic``: the virtual microphone (default source).

The server, its runtime directory and its environment are private to one
``VirtualAudio`` instance. Import ``sounddevice`` only after :meth:`VirtualAudio.start`
(PortAudio enumerates devices when it initialises) or call
:func:`fishtalk.engine.audio.devices.rescan` afterwards.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

SPEAKER = "fishtalk_speaker"
SPEAKER_MONITOR = "fishtalk_speaker_monitor"
MIC_FEED = "fishtalk_mic_feed"
MIC = "fishtalk_mic"
_SINK_RATE = 48_000

# The socket module comes last so that clients only ever see the finished setup. A null
# sink with no low-latency reader renders in 2 s blocks; cycling suspend after the
# loopbacks attach makes it run at their 10 ms pace from the start.
_PA_CONFIG = f"""\
load-module module-null-sink sink_name={SPEAKER} rate={_SINK_RATE} channels=1 \
sink_properties=device.description=fishtalk_speaker
load-module module-null-sink sink_name={MIC_FEED} rate={_SINK_RATE} channels=1 \
sink_properties=device.description=fishtalk_mic_feed
load-module module-remap-source source_name={MIC} master={MIC_FEED}.monitor \
channels=1 source_properties=device.description=fishtalk_mic
load-module module-null-sink sink_name=fishtalk_keepalive rate={_SINK_RATE} channels=1
load-module module-loopback source={SPEAKER}.monitor sink=fishtalk_keepalive latency_msec=10
load-module module-loopback source={MIC_FEED}.monitor sink=fishtalk_keepalive latency_msec=10
set-default-sink {SPEAKER}
set-default-source {MIC}
suspend-sink {SPEAKER} 1
suspend-sink {SPEAKER} 0
suspend-sink {MIC_FEED} 1
suspend-sink {MIC_FEED} 0
load-module module-native-protocol-unix auth-anonymous=1
"""


def _alsa_pcm(name: str, device: str, description: str) -> str:
    return (
        f"pcm.{name} {{\n  type pulse\n  device {device}\n"
        f'  hint {{ show on description "{description}" }}\n}}\n'
    )


_ASOUND_CONF = (
    _alsa_pcm(MIC, MIC, "fishtalk virtual microphone")
    + _alsa_pcm(MIC_FEED, MIC_FEED, "fishtalk virtual microphone feed")
    + _alsa_pcm(SPEAKER, SPEAKER, "fishtalk virtual speaker")
    + _alsa_pcm(SPEAKER_MONITOR, f"{SPEAKER}.monitor", "fishtalk virtual speaker monitor")
)


class VirtualAudioError(RuntimeError):
    """The virtual PulseAudio server could not be started."""


class Recording:
    """A running ``parec`` of the speaker monitor; :meth:`stop` returns the samples."""

    def __init__(self, proc: subprocess.Popen[bytes], path: Path) -> None:
        self._proc = proc
        self._path = path

    def stop(self) -> bytes:
        """Stop recording (by PID) and return the raw s16le samples (empty the 2nd time)."""
        if self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait(timeout=5)
        if not self._path.exists():
            return b""  # stopped before
        data = self._path.read_bytes()
        self._path.unlink()
        return data[: len(data) // 2 * 2]


class VirtualAudio:
    """One private PulseAudio server with the fishtalk virtual devices.

    ``env`` holds the variables a process needs to reach it (``PULSE_SERVER``,
    ``ALSA_CONFIG_PATH``, ...); :meth:`apply_env` copies them into ``os.environ``.
    """

    def __init__(self, root: Path | None = None) -> None:
        self._own_root = root is None
        self.root = Path(tempfile.mkdtemp(prefix="fishtalk-pulse-")) if root is None else root
        self._proc: subprocess.Popen[bytes] | None = None
        runtime = self.root / "runtime"
        self.socket = runtime / "pulse" / "native"
        self.log = self.root / "pulse.log"
        self.env: dict[str, str] = {
            "XDG_RUNTIME_DIR": str(runtime),
            "PULSE_SERVER": f"unix:{self.socket}",
            "PULSE_COOKIE": str(self.root / "pulse-cookie"),
            "PULSE_STATE_PATH": str(self.root / "state"),
            "ALSA_CONFIG_PATH": f"/usr/share/alsa/alsa.conf:{self.root / 'asound.conf'}",
        }
        self._saved_env: dict[str, str | None] = {}

    @staticmethod
    def available() -> str | None:
        """None when the needed programs exist, else what is missing."""
        for prog in ("pulseaudio", "pactl"):
            if shutil.which(prog) is None:
                return f"{prog} not found (apt install pulseaudio pulseaudio-utils)"
        return None

    def _child_env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update(self.env)
        env["HOME"] = str(self.root / "home")
        return env

    def pactl(self, *args: str, timeout: float = 5.0) -> str:
        """Run ``pactl`` against this server and return its output."""
        done = subprocess.run(
            ["pactl", *args],
            env=self._child_env(),
            capture_output=True,
            timeout=timeout,
            check=True,
        )
        return done.stdout.decode(errors="replace")

    def start(self, timeout: float = 10.0) -> None:
        """Start the server and wait until it answers; raise VirtualAudioError if not."""
        missing = self.available()
        if missing is not None:
            raise VirtualAudioError(missing)
        for sub in ("runtime", "home", "state"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        os.chmod(self.root / "runtime", 0o700)
        config = self.root / "default.pa"
        config.write_text(_PA_CONFIG)
        (self.root / "asound.conf").write_text(_ASOUND_CONF)
        self._proc = subprocess.Popen(
            [
                "pulseaudio",
                "--daemonize=no",
                "-n",
                "-F",
                str(config),
                "--exit-idle-time=-1",
                "--disallow-exit",
                "--disable-shm=true",
                f"--log-target=file:{self.log}",
            ],
            env=self._child_env(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + timeout
        while True:
            if self._proc.poll() is not None:
                raise VirtualAudioError(f"pulseaudio exited early; see {self.log}")
            try:
                self.pactl("info", timeout=2.0)
                break
            except (subprocess.CalledProcessError, subprocess.TimeoutExpired):
                if time.monotonic() > deadline:
                    self.stop()
                    raise VirtualAudioError("pulseaudio did not answer") from None
                time.sleep(0.05)

    def feed_mic(self, samples: bytes, *, rate: int = _SINK_RATE) -> subprocess.Popen[bytes]:
        """Start playing s16le mono ``samples`` into the virtual mic; returns at once.

        The samples go through a file so nothing blocks while ``pacat`` plays them in
        real time; the caller waits for (or terminates) the returned process.
        """
        fd, name = tempfile.mkstemp(prefix="feed-", suffix=".raw", dir=self.root)
        with os.fdopen(fd, "wb") as handle:
            handle.write(samples)
        with open(name, "rb") as source:
            return subprocess.Popen(
                [
                    "pacat",
                    "--playback",
                    f"--device={MIC_FEED}",
                    f"--rate={rate}",
                    "--channels=1",
                    "--format=s16le",
                    "--latency-msec=20",
                    "--raw",
                ],
                env=self._child_env(),
                stdin=source,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )

    def record_speaker(self) -> Recording:
        """Start recording the virtual speaker's monitor (s16le mono 48 kHz)."""
        fd, name = tempfile.mkstemp(prefix="rec-", suffix=".raw", dir=self.root)
        # A file, not a pipe: a full pipe would stall parec and lose audio.
        with os.fdopen(fd, "wb") as sink:
            proc = subprocess.Popen(
                [
                    "parec",
                    f"--device={SPEAKER}.monitor",
                    f"--rate={_SINK_RATE}",
                    "--channels=1",
                    "--format=s16le",
                    "--latency-msec=10",
                    "--raw",
                ],
                env=self._child_env(),
                stdin=subprocess.DEVNULL,
                stdout=sink,
                stderr=subprocess.DEVNULL,
            )
        return Recording(proc, Path(name))

    def apply_env(self) -> None:
        """Point this process at the server (before PortAudio initialises)."""
        for key, value in self.env.items():
            self._saved_env.setdefault(key, os.environ.get(key))
            os.environ[key] = value

    def restore_env(self) -> None:
        """Undo :meth:`apply_env`."""
        for key, old in self._saved_env.items():
            if old is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = old
        self._saved_env.clear()

    def kill(self) -> None:
        """Kill the server abruptly (a crashed sound server), keeping its files."""
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait(timeout=5)

    def stop(self) -> None:
        """Stop the server (by its PID) and remove its files."""
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)
        if self._own_root:
            shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> VirtualAudio:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.restore_env()
        self.stop()


@contextlib.contextmanager
def virtual_audio() -> Iterator[VirtualAudio]:
    """Run a virtual server for the duration of the block, with this process pointed at it."""
    va = VirtualAudio()
    va.start()
    va.apply_env()
    try:
        yield va
    finally:
        va.restore_env()
        va.stop()
