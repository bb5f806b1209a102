"""A process on a pseudo-terminal, for tests of what a person at a terminal sees: what it writes is read back
(escape codes removed), what is typed goes to it. Every wait is bounded and wakes on new output, not on a timer."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import struct
import subprocess
import termios
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

WAIT = 60.0
ESCAPES = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07|\r")


class Terminal:
    """`argv` with stdin, stdout and stderr on one pseudo-terminal of 120 columns."""

    def __init__(self, argv: Sequence[str], env: Mapping[str, str], cwd: Path | None = None) -> None:
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
        self.master = master
        self.raw = b""
        self._changed = threading.Condition()
        self._closed = False
        self.process = subprocess.Popen(
            list(argv), stdin=slave, stdout=slave, stderr=slave, env={"TERM": "xterm-256color", **env}, cwd=cwd
        )
        os.close(slave)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while True:
            try:
                data = os.read(self.master, 65536)
            except OSError:  # EIO: every process holding the terminal has closed it
                data = b""
            with self._changed:
                if not data:
                    self._closed = True
                    self._changed.notify_all()
                    return
                self.raw += data
                self._changed.notify_all()

    @property
    def text(self) -> str:
        """Everything written so far, without escape codes or carriage returns."""
        return ESCAPES.sub("", self.raw.decode("utf-8", errors="replace"))

    def expect(self, text: str, timeout: float = WAIT) -> None:
        with self._changed:
            if not self._changed.wait_for(lambda: text in self.text or self._closed, timeout):
                raise AssertionError(f"{text!r} did not appear within {timeout} s; the terminal shows:\n{self.text}")
        if text not in self.text:
            raise AssertionError(f"the terminal closed before {text!r} appeared; it shows:\n{self.text}")

    def type(self, text: str) -> None:
        os.write(self.master, text.encode())

    def wait(self, timeout: float = WAIT) -> int:
        code = self.process.wait(timeout)
        with self._changed:
            self._changed.wait_for(lambda: self._closed, timeout)
        return code

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        os.close(self.master)
