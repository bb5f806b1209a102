"""Which language server checks a file: the known servers, the config's own, the file's language id, the server's
root folder, and the program found on PATH.

The known servers are tried in order within a language (the first found on PATH wins); a config server of the same
name replaces the known one, a new name adds a language. A server's root is the nearest folder, from the file up
to the session's folder that holds it, with one of its project markers (`pyproject.toml`, `package.json`,
`go.mod`, `Cargo.toml`, …), else the session's folder.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from coder_agent.lsp.settings import LspConfig
from coder_agent.process import find_program


@dataclass(frozen=True)
class ServerKind:
    """A language server the agent knows how to start."""

    name: str
    """The config's name for it ("python")."""
    commands: tuple[tuple[str, ...], ...]
    """Command lines to try in order: the first whose program is on PATH is started."""
    extensions: frozenset[str]
    markers: tuple[str, ...] = ()
    """Files that mark a project root for it."""
    language_id: str | None = None
    """None: by extension (`LANGUAGE_IDS`)."""
    initialization_options: Mapping[str, object] | None = None
    settings: Mapping[str, object] | None = None


LANGUAGE_IDS: Mapping[str, str] = {
    "py": "python",
    "pyi": "python",
    "ts": "typescript",
    "mts": "typescript",
    "cts": "typescript",
    "tsx": "typescriptreact",
    "js": "javascript",
    "mjs": "javascript",
    "cjs": "javascript",
    "jsx": "javascriptreact",
    "go": "go",
    "rs": "rust",
    "c": "c",
    "h": "c",
    "cc": "cpp",
    "cpp": "cpp",
    "cxx": "cpp",
    "hpp": "cpp",
    "hh": "cpp",
}

KNOWN: tuple[ServerKind, ...] = (
    ServerKind(
        "python",
        (("basedpyright-langserver", "--stdio"), ("pyright-langserver", "--stdio")),
        frozenset({"py", "pyi"}),
        ("pyproject.toml", "pyrightconfig.json", "setup.py", "setup.cfg"),
    ),
    ServerKind(
        "typescript",
        (("tsc", "--lsp", "--stdio"), ("tsgo", "--lsp", "--stdio"), ("typescript-language-server", "--stdio")),
        frozenset({"ts", "mts", "cts", "tsx", "js", "mjs", "cjs", "jsx"}),
        ("tsconfig.json", "jsconfig.json", "package.json"),
    ),
    ServerKind("go", (("gopls",),), frozenset({"go"}), ("go.mod", "go.work")),
    ServerKind("rust", (("rust-analyzer",),), frozenset({"rs"}), ("Cargo.toml",)),
    ServerKind(
        "c",
        (("clangd", "--background-index=false"),),
        frozenset({"c", "h", "cc", "cpp", "cxx", "hpp", "hh"}),
        ("compile_commands.json", "compile_flags.txt", ".clangd"),
    ),
)


def server_kinds(config: LspConfig) -> tuple[ServerKind, ...]:
    """The known servers with the config's own: one of the same name replaces the known one."""
    kinds = {kind.name: kind for kind in KNOWN}
    for name, server in config.servers.items():
        known = kinds.get(name)
        extensions = frozenset(server.extensions) or (known.extensions if known is not None else frozenset())
        kinds[name] = ServerKind(
            name,
            (tuple(server.command),),
            extensions,
            known.markers if known is not None else (),
            server.language_id,
            server.initialization_options,
            server.settings,
        )
    return tuple(kinds.values())


def kind_for(path: Path, kinds: Sequence[ServerKind]) -> ServerKind | None:
    """The server that checks `path`, by its extension (a config server's extensions first)."""
    extension = path.suffix.removeprefix(".").lower()
    if not extension:
        return None
    for kind in reversed(kinds):  # config servers come last: they win over the known ones
        if extension in kind.extensions:
            return kind
    return None


def language_id(path: Path, kind: ServerKind) -> str:
    return kind.language_id or LANGUAGE_IDS.get(path.suffix.removeprefix(".").lower(), kind.name)


def find_command(kind: ServerKind, environ: Mapping[str, str], outside: Sequence[Path] = ()) -> list[str] | None:
    """The first of the server's command lines whose program is found on PATH, with the program's full path: on no
    PATH entry inside the folders `outside` (a server that runs without walls is never one a command planted:
    `process.find_program`; a full path in the config is the user's word). `tsc` counts only from TypeScript 7 on
    (the first with a language server of its own, `tsc --lsp`)."""
    search = environ.get("PATH", os.defpath)
    for command in kind.commands:
        program = command[0]
        if os.sep in program:
            found = program if os.access(program, os.X_OK) else None
        else:
            found = (
                find_program(program, outside=outside, path=search) if outside else shutil.which(program, path=search)
            )
        if found is None or (program == "tsc" and command[1:2] == ("--lsp",) and not _typescript_7(Path(found))):
            continue
        return [found, *command[1:]]
    return None


def planted(kind: ServerKind, environ: Mapping[str, str]) -> str | None:
    """Where a program of the server lies on PATH at all (after `find_command` found none outside the session's
    folders: inside them, so not started)."""
    search = environ.get("PATH", os.defpath)
    return next((found for c in kind.commands if (found := shutil.which(c[0], path=search)) is not None), None)


def _typescript_7(tsc: Path) -> bool:
    """`tsc` belongs to TypeScript 7 or newer (read from its package's package.json; no process is started)."""
    import json

    try:
        package = tsc.resolve().parent.parent / "package.json"
        version = json.loads(package.read_text(encoding="utf-8")).get("version", "")
        return int(str(version).split(".", 1)[0]) >= 7
    except (OSError, ValueError, AttributeError):
        return False


def initialization_options(kind: ServerKind, command: Sequence[str], root: Path) -> dict[str, object]:
    """The server's `initializationOptions`: the config's, and for typescript-language-server the TypeScript
    installed beside it when the project has none of its own (it refuses to start without one)."""
    options = dict(kind.initialization_options or {})
    if kind.name == "typescript" and "tsserver" not in options and not (root / "node_modules" / "typescript").is_dir():
        beside = Path(command[0]).resolve().parent.parent.parent / "typescript" / "lib" / "tsserver.js"
        if beside.is_file():
            options["tsserver"] = {"path": str(beside)}
    return options


def root_for(path: Path, roots: Sequence[Path], kind: ServerKind) -> Path | None:
    """The server's root folder for `path`: the nearest folder with a marker, up to the session folder that holds
    it; that folder when there is none; None when `path` is in none of `roots`."""
    holder = next((root for root in roots if path.is_relative_to(root)), None)
    if holder is None:
        return None
    folder = path.parent
    while folder != holder and folder.is_relative_to(holder):
        if any((folder / marker).is_file() for marker in kind.markers):
            return folder
        folder = folder.parent
    return holder
