"""The model key `coder-agent login` stores, and where: the OS keyring, or a file only its owner can read.

`LoginStore.save` puts the login (the provider, the model and the key) in the OS keyring through the `keyring`
package (the Secret Service on Linux, the Keychain on macOS, the Credential Locker on Windows); where no keyring
works (a headless Linux, a container) it writes `credentials.json` in the user's data folder instead, mode 0600 in
a folder of mode 0700 — never in a project, and kept out of sandboxed commands like the rest of the agent's data.
`load` reads it back (keyring first), `delete` removes it from both (`coder-agent logout`, ACP `logout`).

The key is a model key like those of the environment: once read it is registered with `secrets` so it is redacted
wherever they are (the file's is read for that at every session's opening, used or not: `know_stored_file`), and
it is handed to the model library as a parameter, never put into an environment, so no child process gets it.
`keyring` takes a few hundred milliseconds to load its backends: it is imported on first use only, which is a
session's setup when no model or key is configured otherwise, never `initialize`. `PYTHON_KEYRING_BACKEND`
(keyring's own variable) picks a backend, `keyring.backends.fail.Keyring` none at all.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import platformdirs

from coder_agent import secrets
from coder_agent.atomic import write_atomic

log = logging.getLogger(__name__)

SERVICE = "coder-agent"
ACCOUNT = "model-login"
FILE_NAME = "credentials.json"
STORED_KEY = "stored login"
"""How a redacted stored key is labelled (`[redacted stored login]`)."""


@dataclass(frozen=True)
class Login:
    """A stored login: the provider (litellm's prefix), the model string, and the key (never shown)."""

    provider: str
    model: str
    key: str = field(repr=False)

    def to_json(self) -> str:
        return json.dumps({"provider": self.provider, "model": self.model, "key": self.key})

    @classmethod
    def from_json(cls, text: str) -> Login | None:
        try:
            data = json.loads(text)
        except ValueError:
            return None
        if not isinstance(data, dict) or not all(isinstance(data.get(k), str) and data[k] for k in ("model", "key")):
            return None
        provider = data.get("provider")
        return cls(provider if isinstance(provider, str) else "", data["model"], data["key"])


class LoginStore:
    """Where `coder-agent login` keeps the login (see the module docstring); `folder` None: the user's data folder."""

    def __init__(self, folder: Path | None = None) -> None:
        self.file = (folder or platformdirs.user_data_path("coder-agent")) / FILE_NAME

    def load(self) -> Login | None:
        """The stored login (the keyring's first, then the file's), registered as a key to redact; None if none."""
        login = self._from_keyring() or self._from_file()
        if login is not None:
            secrets.add_key_value(login.key, STORED_KEY)
        return login

    def know_stored_file(self) -> None:
        """Register the key of the file's login, if there is one, to be redacted, without loading the keyring: a
        session that does not use the login (its key comes from elsewhere) must not show it either should a read
        or a command the user allows reach the file."""
        login = self._from_file()
        if login is not None:
            secrets.add_key_value(login.key, STORED_KEY)

    def key_for(self, provider: str) -> str | None:
        """The stored key, if the stored login is for `provider` (a key is never sent to another provider)."""
        login = self.load()
        if login is None or not provider or login.provider != provider:
            return None
        return login.key

    def save(self, login: Login) -> str:
        """Store `login`, replacing any other; where it went, in words (the keyring's name, or the file's path)."""
        secrets.add_key_value(login.key, STORED_KEY)
        backend = _keyring()
        if backend is not None:
            try:
                backend.set_password(SERVICE, ACCOUNT, login.to_json())
            except Exception as exc:  # a locked or refusing keyring: the file instead
                log.info("the keyring did not take the login (%s); writing the file instead", exc)
                with contextlib.suppress(Exception):  # an older login there would be read before the file
                    backend.delete_password(SERVICE, ACCOUNT)
            else:
                self._remove_file()  # one place only: a key left behind in the file would outlive a logout
                return f"the OS keyring ({_name(backend)})"
        self.file.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        os.chmod(self.file.parent, 0o700)
        write_atomic(self.file, login.to_json().encode(), mode=0o600)
        return f"{self.file} (readable by you alone: no OS keyring works here)"

    def delete(self) -> list[str]:
        """Remove the stored login from the keyring and the file; where one was removed, in words."""
        removed: list[str] = []
        backend = _keyring()
        if backend is not None:
            with contextlib.suppress(Exception):  # nothing stored there (or no keyring after all)
                backend.delete_password(SERVICE, ACCOUNT)
                removed.append(f"the OS keyring ({_name(backend)})")
        if self._remove_file():
            removed.append(str(self.file))
        return removed

    def _from_keyring(self) -> Login | None:
        backend = _keyring()
        if backend is None:
            return None
        try:
            stored = backend.get_password(SERVICE, ACCOUNT)
        except Exception as exc:  # locked, or no keyring after all
            log.info("the keyring could not be read: %s", exc)
            return None
        return Login.from_json(stored) if stored else None

    def _from_file(self) -> Login | None:
        try:
            with self.file.open(encoding="utf-8") as handle:
                if os.fstat(handle.fileno()).st_mode & 0o077:
                    log.warning("%s can be read by others: not used (make it 0600, or log in again)", self.file)
                    return None
                return Login.from_json(handle.read())
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as exc:
            log.warning("%s could not be read: %s", self.file, exc)
            return None

    def _remove_file(self) -> bool:
        try:
            self.file.unlink()
        except FileNotFoundError:
            return False
        return True


def _keyring() -> Any:
    """The keyring backend in use (imported here, on first use), or None when none works on this machine."""
    try:
        import keyring
        from keyring.backends import fail
    except ImportError:
        return None
    backend = keyring.get_keyring()
    if isinstance(backend, fail.Keyring) or getattr(backend, "priority", 1) <= 0:
        return None
    return backend


def _name(backend: Any) -> str:
    return str(getattr(backend, "name", None) or type(backend).__name__)
