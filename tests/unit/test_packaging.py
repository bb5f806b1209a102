"""The package's metadata: one version, the license, project URLs, dependency ranges that uv.lock tests, and a
README that still works on the package index (no relative links, editor snippets that parse)."""

from __future__ import annotations

import importlib.metadata
import json
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

import coder_agent

ROOT = Path(__file__).resolve().parents[2]
REPOSITORY = "https://github.com/coder-agent/coder-agent"
PINNED_TO_MINOR = ("litellm", "mcp")
"""Dependencies whose minor releases change behaviour we rely on: capped at the locked minor version."""


def _pyproject() -> dict[str, Any]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def _locked_versions() -> dict[str, Version]:
    lock = tomllib.loads((ROOT / "uv.lock").read_text(encoding="utf-8"))
    return {package["name"]: Version(package["version"]) for package in lock["package"] if "version" in package}


def test_the_version_is_written_once_in_the_package() -> None:
    project = _pyproject()["project"]
    assert "version" not in project
    assert project["dynamic"] == ["version"]
    assert _pyproject()["tool"]["hatch"]["version"]["path"] == "coder_agent/__init__.py"
    assert re.fullmatch(r"\d+\.\d+\.\d+", coder_agent.__version__)
    # The installed metadata follows it (uv's cache-keys include __init__.py, so `uv run` refreshes it).
    assert importlib.metadata.version("coder-agent") == coder_agent.__version__


def test_license_is_the_apache_2_text_and_is_shipped() -> None:
    project = _pyproject()["project"]
    assert project["license"] == "Apache-2.0"
    assert project["license-files"] == ["LICENSE"]
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert "Apache License\n                           Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text
    assert not [c for c in project["classifiers"] if c.startswith("License ::")]  # PEP 639: the expression only


def test_project_urls_point_at_the_repository() -> None:
    urls = _pyproject()["project"]["urls"]
    assert set(urls) == {"Homepage", "Repository", "Issues", "Changelog"}
    assert urls["Repository"] == REPOSITORY
    for url in urls.values():
        assert url == REPOSITORY or url.startswith(REPOSITORY + "/"), url


@pytest.mark.parametrize("requirement", _pyproject()["project"]["dependencies"])
def test_each_dependency_range_holds_the_locked_version_and_has_an_upper_bound(requirement: str) -> None:
    req = Requirement(requirement)
    locked = _locked_versions()[req.name]
    assert req.specifier.contains(locked), f"uv.lock has {req.name} {locked}, outside {req.specifier}"
    uppers = [Version(spec.version) for spec in req.specifier if spec.operator == "<"]
    assert uppers, f"{req.name} has no upper bound: users could get a version no test has seen"
    if req.name in PINNED_TO_MINOR:
        next_minor = Version(f"{locked.major}.{locked.minor + 1}")
        assert uppers == [next_minor], f"{req.name} must stay below {next_minor}, the minor after the locked {locked}"


def _markdown_links(text: str) -> list[str]:
    return re.findall(r"\]\(([^)\s]+)\)", text)


def test_readme_links_are_absolute_so_they_work_on_the_package_index() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    links = _markdown_links(text)
    assert links
    relative = [link for link in links if not link.startswith("https://")]
    assert not relative, f"relative links break on the package index, use {REPOSITORY}/blob/main/...: {relative}"
    for link in links:
        if link.startswith(REPOSITORY + "/blob/main/") or link.startswith(REPOSITORY + "/tree/main/"):
            path = link.split("/main/", 1)[1].split("#")[0]
            assert (ROOT / path).exists(), f"the README links to {path}, which is not in the repository"


def test_readme_editor_snippets_are_valid_json_and_start_with_uvx_coder_agent() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```json\n(.*?)```", text, flags=re.DOTALL)
    servers = [server for block in blocks for server in json.loads(block)["agent_servers"].values()]
    commands = [[server["command"], *server["args"]] for server in servers]
    assert commands[0] == ["uvx", "coder-agent"]
    assert ["uv", "run", "--directory", "/path/to/checkout", "coder-agent"] in commands
    # `uvx --from <checkout>` asks the package index on every launch and fails offline.
    assert not [command for command in commands if "--from" in command]
