"""Which projects' hooks the user trusts: a small JSON file in the agent's data folder, mapping the folder of a
project file (`<folder>/.coder-agent/config.toml`) to the digest of the hooks the user trusted there
(`ProjectHooks.digest`). Hooks that changed since, or another folder's, are not trusted: the user is asked again.
A yes given where the session's commands are walled (the question said the hooks run inside the sandbox) does not
stand where they would run with the user's rights (a session without walls): that is asked again, and a yes there
(`UNWALLED`, after the digest) stands for both.

The file is the user's alone (0600), written atomically, and lives where sandboxed commands can neither read nor
write it (the agent's data folder is kept out of the walls), so a repository cannot trust itself.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import platformdirs

from coder_agent.atomic import write_atomic
from coder_agent.config.hooks import ProjectHooks

log = logging.getLogger(__name__)

FILE_NAME = "trusted-hooks.json"
UNWALLED = "+unwalled"
"""After the digest: the user trusted these hooks to run with their rights too (where no sandbox holds them)."""


def default_file() -> Path:
    return platformdirs.user_data_path("coder-agent") / FILE_NAME


class HookTrust:
    """The trusted project hooks, read from and remembered in `path`."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or default_file()

    def trusted(self, project: ProjectHooks, *, walled: bool) -> bool:
        """These hooks were trusted in this folder, to run as they would now (`walled`: inside the sandbox)."""
        record = self._read().get(_folder(project))
        return record == project.digest + UNWALLED or (walled and record == project.digest)

    def remember(self, project: ProjectHooks, *, walled: bool) -> None:
        """Trust these hooks in this folder (until they change), inside the walls only when `walled`; an OSError if
        it cannot be written."""
        known = self._read()
        known[_folder(project)] = project.digest + ("" if walled else UNWALLED)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(self.path, (json.dumps(known, indent=2, sort_keys=True) + "\n").encode(), mode=0o600)

    def _read(self) -> dict[str, str]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            log.warning("%s cannot be read (%s): no project's hooks are trusted", self.path, exc)
            return {}
        return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}


def _folder(project: ProjectHooks) -> str:
    """The folder the project file belongs to, as the key its trust is remembered under."""
    return str(project.file.parent.parent.resolve())
