"""`coder-agent login` and `coder-agent logout`: set the agent up from a terminal, without editing any settings.

An editor that runs ACP's terminal auth methods (Zed, JetBrains) offers "Log in" and runs `coder-agent login` in a
terminal the user works in; so can anyone. The login asks for a provider and a model (numbered pickers; `--model`
skips them), then the key (not echoed), checks it with one small request to the model, and stores the three with
`credentials.LoginStore`: in the OS keyring, or in a 0600 file in the user's data folder where no keyring works,
saying which. It exits 0 once the key is stored (the editor then starts sessions), non-zero otherwise, with nothing
stored. `logout` removes the stored login (ACP's `logout` does the same).

What it prints goes to the terminal, the key never: the provider's answer to a bad key is redacted before it is
shown. The check goes to the provider's own endpoint (litellm's variables, such as `OPENAI_BASE_URL`, apply), as a
stored key is only ever used there.
"""

from __future__ import annotations

import sys
import termios
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

import anyio

from coder_agent import secrets
from coder_agent.agent.config_source import ConfigSource
from coder_agent.agent.model_runner import ModelRunner
from coder_agent.config import CliOverrides
from coder_agent.credentials import Login, LoginStore
from coder_agent.errors import RpcError
from coder_agent.model import providers
from coder_agent.model.base import ModelError, ModelSettings

CHECK_TIMEOUT = 60.0
CHECK = [{"role": "user", "content": "Reply with the single word: ready"}]
TRIES = 3
"""How many keys may be pasted before the login gives up."""


@dataclass(frozen=True)
class Provider:
    label: str
    prefix: str
    """litellm's provider prefix."""
    models: tuple[str, ...]
    keys_page: str
    """Where its keys are made."""


PROVIDERS = (
    Provider(
        "Anthropic",
        "anthropic",
        ("anthropic/claude-sonnet-4-5", "anthropic/claude-opus-4-1", "anthropic/claude-haiku-4-5"),
        "https://console.anthropic.com/settings/keys",
    ),
    Provider(
        "OpenAI",
        "openai",
        ("openai/gpt-5", "openai/gpt-4.1", "openai/gpt-5-mini"),
        "https://platform.openai.com/api-keys",
    ),
    Provider(
        "Google Gemini",
        "gemini",
        ("gemini/gemini-2.5-pro", "gemini/gemini-2.5-flash"),
        "https://aistudio.google.com/apikey",
    ),
    Provider(
        "OpenRouter",
        "openrouter",
        ("openrouter/anthropic/claude-sonnet-4.5", "openrouter/openai/gpt-5"),
        "https://openrouter.ai/keys",
    ),
    Provider(
        "DeepSeek",
        "deepseek",
        ("deepseek/deepseek-chat", "deepseek/deepseek-reasoner"),
        "https://platform.deepseek.com",
    ),
    Provider(
        "Mistral", "mistral", ("mistral/mistral-large-latest", "mistral/codestral-latest"), "https://console.mistral.ai"
    ),
    Provider("xAI", "xai", ("xai/grok-4",), "https://console.x.ai"),
    Provider("Groq", "groq", ("groq/llama-3.3-70b-versatile",), "https://console.groq.com/keys"),
)


class Cancelled(Exception):
    """The user left the login (end of input, Ctrl-C)."""


class Terminal:
    """The questions, on a terminal: `ask` reads a line, `secret` one that is not echoed."""

    def __init__(self, out: TextIO, ask: Callable[[str], str], secret: Callable[[str], str]) -> None:
        self.out = out
        self._ask = ask
        self._secret = secret

    def say(self, text: str = "") -> None:
        self.out.write(secrets.redact(text) + "\n")
        self.out.flush()

    def ask(self, prompt: str) -> str:
        try:
            return self._ask(prompt).strip()
        except (EOFError, KeyboardInterrupt):
            raise Cancelled from None

    def secret(self, prompt: str) -> str:
        try:
            return self._secret(prompt).strip()
        except (EOFError, KeyboardInterrupt):
            raise Cancelled from None

    def pick(self, title: str, options: list[str]) -> int:
        """The index of the option picked by its number (Enter: the first)."""
        self.say(title)
        for number, option in enumerate(options, 1):
            self.say(f"  {number}. {option}")
        while True:
            answer = self.ask(f"Number [1-{len(options)}, Enter for 1]: ")
            if not answer:
                return 0
            if answer.isdigit() and 1 <= int(answer) <= len(options):
                return int(answer) - 1
            self.say(f"Type a number from 1 to {len(options)}.")


def login_main(config_file: Path | None, model: str | None) -> int:
    """`coder-agent login` on this process's terminal; its exit status."""
    if not sys.stdin.isatty():
        print(
            "coder-agent login asks its questions in a terminal: run it in one (your editor's Log in button does).",
            file=sys.stderr,
        )
        return 2
    terminal = Terminal(sys.stdout, input, _hidden)
    source = ConfigSource(CliOverrides(config_file=config_file, model=model), logins=LoginStore())
    try:
        return anyio.run(login, terminal, source, model)
    except Cancelled:
        terminal.say("\nNothing was stored.")
        return 130


def logout_main() -> int:
    """`coder-agent logout`: the stored login removed; its exit status (0, whether there was one or not)."""
    removed = LoginStore().delete()
    if removed:
        print(f"The stored login was removed from {' and '.join(removed)}.")
    else:
        print("No login was stored (keys in your environment or config are left as they are).")
    return 0


async def login(terminal: Terminal, source: ConfigSource, model: str | None = None) -> int:
    """Ask, check and store (see the module docstring); the exit status."""
    terminal.say("coder-agent login: a model and its key, checked with one request and stored for this account.")
    terminal.say()
    provider, model = _choose(terminal, model)
    terminal.say()
    if provider.keys_page:
        terminal.say(f"Your {provider.label} keys are at {provider.keys_page}.")
    for attempt in range(1, TRIES + 1):
        key = terminal.secret(f"Paste your {provider.label} API key (it is not shown): ")
        if not key:
            terminal.say("No key was pasted.")
            continue
        secrets.add_key_value(key, "the pasted key")
        terminal.say(f"Checking it with one request to {model}…")
        problem = await _check(source, model, key)
        if problem is None:
            where = await anyio.to_thread.run_sync(LoginStore().save, Login(provider.prefix, model, key))
            terminal.say(f"It works. Stored in {where}.")
            _note_config(terminal, source, provider.prefix)
            return 0
        terminal.say(f"That did not work: {problem}")
        if attempt < TRIES:
            terminal.say("Try again, or press Ctrl-C to stop.")
    terminal.say("Nothing was stored.")
    return 1


def _choose(terminal: Terminal, model: str | None) -> tuple[Provider, str]:
    """The provider and the model: from `--model` if given, else picked."""
    if model:
        prefix = providers.provider_of(model)
        known = next((p for p in PROVIDERS if p.prefix == prefix), None)
        provider = known or Provider(prefix or "the provider", prefix, (model,), "")
        terminal.say(f"Model: {model} (from --model).")
        return provider, model
    provider = PROVIDERS[terminal.pick("Which provider?", [p.label for p in PROVIDERS])]
    terminal.say()
    options = [*provider.models, "another model (type its litellm name)"]
    index = terminal.pick(f"Which {provider.label} model?", options)
    if index < len(provider.models):
        return provider, provider.models[index]
    while True:
        typed = terminal.ask(f"The model, as {provider.prefix}/<name>: ")
        name = typed if typed.startswith(f"{provider.prefix}/") else f"{provider.prefix}/{typed}"
        problem = providers.check_model(name) if typed else "no model was typed"
        if problem is None:
            return provider, name
        terminal.say(problem)


def _hidden(prompt: str) -> str:
    """A line read from the terminal on stdin with its echo off (what is pasted is not shown): the echo goes off
    before the prompt is written, so nothing pasted after it is ever shown, and nothing typed is thrown away."""
    fd = sys.stdin.fileno()
    before = termios.tcgetattr(fd)
    quiet = list(before)
    quiet[3] &= ~termios.ECHO
    try:
        termios.tcsetattr(fd, termios.TCSADRAIN, quiet)
        sys.stdout.write(prompt)
        sys.stdout.flush()
        line = sys.stdin.readline()
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, before)
        sys.stdout.write("\n")
        sys.stdout.flush()
    if not line:
        raise EOFError
    return line.rstrip("\n")


async def _check(source: ConfigSource, model: str, key: str) -> str | None:
    """None if one tiny request with this key works; else what went wrong, in the provider's words (redacted)."""
    settings = ModelSettings(model=model, api_key=key, max_tokens=16, retries=0, request_timeout=CHECK_TIMEOUT)
    try:
        with anyio.fail_after(CHECK_TIMEOUT + 5):
            await ModelRunner(source).make_model(settings).complete(CHECK)
    except ModelError as exc:
        return secrets.redact(str(exc))
    except TimeoutError:
        return f"the provider did not answer within {CHECK_TIMEOUT:g} s"
    return None


def _note_config(terminal: Terminal, source: ConfigSource, prefix: str) -> None:
    """Say when the config decides otherwise: its own model of another provider, or a server of its own."""
    try:
        config, _ = source.load(None)
    except RpcError:
        return
    if config.api_base is not None:
        terminal.say(
            f"Note: your config sends requests to {config.api_base}; the stored key is used at the provider's own "
            "endpoint only."
        )
    elif config.model and providers.provider_of(config.model) != prefix and config.source_of("model"):
        terminal.say(
            f"Note: your config names the model {config.model}, of another provider; the stored key is used with "
            "a model of its own provider only."
        )
