"""`acp-registry/` (the entry submitted to the ACP agent registry) against the registry's schema and the rules its
CI applies, and in step with the package: the same id, name, version and license."""

from __future__ import annotations

import json
import tomllib
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft7Validator

from coder_agent import __version__
from coder_agent.acp import handshake

ROOT = Path(__file__).resolve().parents[2]
ENTRY = ROOT / "acp-registry"
SCHEMA = ROOT / "tests" / "acp_schema" / "registry-agent.schema.json"
ICON_PAINT = {"currentcolor", "none", "inherit"}
"""The only fill and stroke values the registry accepts: icons follow the editor's theme."""
SHAPES = {"svg", "g", "path", "rect", "circle", "ellipse", "line", "polyline", "polygon"}


def manifest() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((ENTRY / "agent.json").read_text(encoding="utf-8"))
    return data


def test_manifest_is_valid_against_the_registry_schema() -> None:
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    Draft7Validator.check_schema(schema)
    errors = [
        e.message
        for e in Draft7Validator(schema, format_checker=Draft7Validator.FORMAT_CHECKER).iter_errors(manifest())
    ]
    assert not errors
    assert set(manifest()) <= set(schema["properties"]), "a field the registry does not know"
    assert "icon" not in manifest()  # the registry's build sets it from icon.svg


def test_the_schema_rejects_what_the_registry_rejects() -> None:
    """The copied schema is really checked: a manifest without a distribution or with an unknown one fails."""
    validator = Draft7Validator(json.loads(SCHEMA.read_text(encoding="utf-8")))
    broken = {k: v for k, v in manifest().items() if k != "distribution"}
    assert not validator.is_valid(broken)
    assert not validator.is_valid({**manifest(), "distribution": {"pip": {"package": "coder-agent"}}})
    assert not validator.is_valid({**manifest(), "id": "Coder Agent"})


def test_manifest_matches_the_package() -> None:
    entry = manifest()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert entry["id"] == project["name"] == handshake.AGENT_INFO["name"]
    assert entry["name"] == handshake.AGENT_INFO["title"]
    assert entry["license"] == project["license"]
    assert entry["repository"] == project["urls"]["Repository"]
    assert entry["description"] == project["description"]
    # The schema's "uri" format is not checked without an extra package: check the addresses here.
    assert entry["website"].startswith(entry["repository"] + "#")
    assert entry["license_url"] == entry["repository"] + "/blob/main/LICENSE"
    assert (ROOT / "LICENSE").is_file()


def test_uvx_distribution_is_pinned_to_the_package_version() -> None:
    """The registry runs `uvx <package> [args]`; its CI wants `name==X.Y.Z` equal to the entry's version."""
    entry = manifest()
    assert entry["version"] == __version__
    assert set(entry["distribution"]) == {"uvx"}
    assert entry["distribution"]["uvx"]["package"] == f"coder-agent=={__version__}"


def icon_problems(text: str) -> list[str]:
    """What the registry's CI would reject in an `icon.svg`, or what this project rules out besides: an empty
    list for a good icon."""
    if "<!--" in text:
        return ["a comment (the registry embeds icons in MDX pages, where comments break)"]
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        return [f"not XML: {exc}"]
    problems = []
    if root.tag != "{http://www.w3.org/2000/svg}svg":
        problems.append(f"the root is {root.tag}, not an SVG <svg>")
    if (root.get("width"), root.get("height"), root.get("viewBox")) != ("16", "16", "0 0 16 16"):
        problems.append("not a 16×16 square (width, height and viewBox)")
    painted = []
    for element in root.iter():
        tag = element.tag.rsplit("}", 1)[-1]
        if tag not in SHAPES:
            problems.append(f"<{tag}> (only plain shapes)")
        if any(name.endswith("href") for name in element.attrib) or "style" in element.attrib:
            problems.append(f"<{tag}> has an href or a style attribute")
        for attribute in ("fill", "stroke"):
            if (value := element.get(attribute)) is not None:
                painted.append(value.lower())
                if value.lower() not in ICON_PAINT:
                    problems.append(f'{attribute}="{value}" (use currentColor)')
    if "currentcolor" not in painted:
        problems.append("nothing is painted with currentColor")
    return problems


ICON = (ENTRY / "icon.svg").read_text(encoding="utf-8")


def test_icon_meets_the_registry_rules() -> None:
    assert icon_problems(ICON) == []


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ('stroke="currentColor"', 'stroke="#ff0000"'),
        ('stroke="currentColor"', 'stroke="red"'),
        ('stroke="currentColor"', 'stroke="none"'),
        ('stroke="currentColor"', 'style="stroke: currentColor"'),
        ('width="16" height="16"', 'width="24" height="24"'),
        ('viewBox="0 0 16 16"', 'viewBox="0 0 16 12"'),
        ("<rect ", "<!-- frame --><rect "),
        ("<rect ", '<image href="https://example.com/x.png"/><rect '),
    ],
)
def test_the_icon_check_rejects_what_the_registry_rejects(old: str, new: str) -> None:
    assert old in ICON
    assert icon_problems(ICON.replace(old, new, 1))
