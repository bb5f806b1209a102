"""`LocalEnvironment`: a Harbor environment whose commands run on this machine, in temporary folders.

Docker has no engine on the machines the tests run on, so the Harbor agent is tested against Harbor's own
`BaseEnvironment` interface with this one: `exec` runs the command with bash in the task's folder, with a home
of its own, and records it (command, variables, folder) for the test to check; files are copied. The agent's
log folder is given to the agent as its environment log folder, as a Docker mount would make it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from harbor.environments.base import BaseEnvironment, ExecResult
from harbor.models.task.config import EnvironmentConfig
from harbor.models.trial.paths import TrialPaths

PASSED_ON = (
    *("SSL_", "UV_", "PIP_", "REQUESTS_CA", "CURL_CA"),
    *("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy"),
)
"""This machine's ways to reach the package registries, which a container would have configured for itself."""


@dataclass(frozen=True)
class Executed:
    command: str
    env: dict[str, str]
    cwd: str
    user: str | int | None
    result: ExecResult


class LocalEnvironment(BaseEnvironment):
    """Commands run here, in `workdir`, with `home` as HOME; every one recorded in `executed`."""

    def __init__(self, root: Path, *, path: str | None = None, **kwargs: Any) -> None:
        self.root = root
        self.workdir = root / "task"
        self.home = root / "home"
        for folder in (self.workdir, self.home, root / "environment", root / "trial"):
            folder.mkdir(parents=True, exist_ok=True)
        self.path = path if path is not None else os.environ.get("PATH", "")
        self.executed: list[Executed] = []
        super().__init__(
            environment_dir=root / "environment",
            environment_name="local",
            session_id="local__test__env",
            trial_paths=TrialPaths(root / "trial"),
            task_env_config=EnvironmentConfig(),
            **kwargs,
        )

    @staticmethod
    def type() -> str:
        return "local-test"

    def _validate_definition(self) -> None:
        pass

    async def start(self, force_build: bool) -> None:
        pass

    async def stop(self, delete: bool) -> None:
        pass

    async def upload_file(self, source_path: Path | str, target_path: str) -> None:
        Path(target_path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source_path, target_path)

    async def upload_dir(self, source_dir: Path | str, target_dir: str) -> None:
        shutil.copytree(source_dir, target_dir, dirs_exist_ok=True)

    async def download_file(self, source_path: str, target_path: Path | str) -> None:
        shutil.copyfile(source_path, target_path)

    async def download_dir(self, source_dir: str, target_dir: Path | str) -> None:
        shutil.copytree(source_dir, target_dir, dirs_exist_ok=True)

    async def exec(
        self,
        command: str,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        timeout_sec: int | None = None,
        user: str | int | None = None,
    ) -> ExecResult:
        variables = {
            **{name: value for name, value in os.environ.items() if name.startswith(PASSED_ON)},
            "HOME": str(self.home),
            "PATH": self.path,
            "LANG": "C.UTF-8",
            "XDG_DATA_HOME": str(self.home / ".local" / "share"),
            "XDG_CONFIG_HOME": str(self.home / ".config"),
            "UV_CACHE_DIR": os.environ.get("UV_CACHE_DIR", str(Path.home() / ".cache" / "uv")),
            "UV_LINK_MODE": "copy",
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            **(env or {}),
        }
        folder = cwd or str(self.workdir)
        with anyio.fail_after(timeout_sec or 600):
            done = await anyio.run_process(
                ["bash", "-c", command], cwd=folder, env=variables, check=False, stdin=subprocess.DEVNULL
            )
        result = ExecResult(
            stdout=done.stdout.decode("utf-8", "replace"),
            stderr=done.stderr.decode("utf-8", "replace"),
            return_code=done.returncode,
        )
        self.executed.append(Executed(command, dict(env or {}), folder, user, result))
        return result

    def commands(self) -> list[str]:
        return [e.command for e in self.executed]
