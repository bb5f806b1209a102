"""The stored login (`coder-agent login`): in the OS keyring, or a file only its owner reads where none works; read
back, removed from both, refused when others could read it, and treated as a key (redacted) once read."""

from __future__ import annotations

import stat
from collections.abc import Iterator
from pathlib import Path

import keyring
import pytest
from keyring.backend import KeyringBackend

from coder_agent import secrets
from coder_agent.credentials import ACCOUNT, SERVICE, Login, LoginStore

KEY = "sk-stored-login-key-0123456789"


class MemoryKeyring(KeyringBackend):
    """A keyring in memory: the OS keyring's part, without touching the user's."""

    priority = 1  # type: ignore[assignment]

    def __init__(self) -> None:
        super().__init__()
        self.items: dict[tuple[str, str], str] = {}

    def get_password(self, service: str, username: str) -> str | None:
        return self.items.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        self.items[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        if (service, username) not in self.items:
            raise keyring.errors.PasswordDeleteError("nothing stored")
        del self.items[(service, username)]


@pytest.fixture
def memory_keyring() -> Iterator[MemoryKeyring]:
    before = keyring.get_keyring()
    backend = MemoryKeyring()
    keyring.set_keyring(backend)
    yield backend
    keyring.set_keyring(before)


def test_without_a_keyring_the_file_is_the_owners_alone_and_says_where(tmp_path: Path) -> None:
    store = LoginStore(tmp_path / "data")
    where = store.save(Login("openai", "openai/gpt-4.1", KEY))
    assert str(store.file) in where and "no OS keyring" in where
    assert stat.S_IMODE(store.file.stat().st_mode) == 0o600
    assert stat.S_IMODE(store.file.parent.stat().st_mode) == 0o700
    assert store.load() == Login("openai", "openai/gpt-4.1", KEY)
    assert store.key_for("openai") == KEY
    assert store.key_for("anthropic") is None, "a key is never given to another provider"
    assert store.delete() == [str(store.file)]
    assert store.load() is None and not store.file.exists()


def test_a_file_others_can_read_is_not_used(tmp_path: Path) -> None:
    store = LoginStore(tmp_path / "data")
    store.save(Login("openai", "openai/gpt-4.1", KEY))
    store.file.chmod(0o644)
    assert store.load() is None


def test_with_a_keyring_the_login_goes_there_and_no_file_is_left(tmp_path: Path, memory_keyring: MemoryKeyring) -> None:
    store = LoginStore(tmp_path / "data")
    store.file.parent.mkdir(parents=True)
    store.file.write_text(Login("openai", "openai/old", "sk-older-one-000000").to_json())
    store.file.chmod(0o600)
    where = store.save(Login("anthropic", "anthropic/claude-sonnet-4-5", KEY))
    assert where.startswith("the OS keyring")
    assert not store.file.exists(), "one place only: a key left in the file would outlive a logout"
    assert (SERVICE, ACCOUNT) in memory_keyring.items
    assert store.load() == Login("anthropic", "anthropic/claude-sonnet-4-5", KEY)
    assert store.delete() == [where.removesuffix(".")]
    assert memory_keyring.items == {}


def test_a_read_key_is_redacted_like_a_key_variable(tmp_path: Path) -> None:
    store = LoginStore(tmp_path / "data")
    store.save(Login("openai", "openai/gpt-4.1", KEY))
    assert LoginStore(tmp_path / "data").load() is not None
    assert KEY not in secrets.redact(f"the provider said: bad key {KEY}")
    assert "[redacted stored login]" in secrets.redact(f"bad key {KEY}")


@pytest.mark.parametrize("text", ["", "{}", "[1]", '{"model": "m"}', "not json"])
def test_a_damaged_record_is_no_login(tmp_path: Path, text: str) -> None:
    store = LoginStore(tmp_path / "data")
    store.file.parent.mkdir(parents=True)
    store.file.write_text(text)
    store.file.chmod(0o600)
    assert store.load() is None
