"""The sandbox as the agent declares it to the editor in `initialize` (`agentCapabilities._meta.sandbox`), in the
shape of the draft ACP RFD "Sandbox Capability and Policy" (`mode`, `guarantees`), plus what only we know.

Read fast, before anything heavy loads: the machine's support from `probe.quick()`, and `enabled` / `network`
straight from the user's config file (and the file `CODER_AGENT_CONFIG` names) with tomllib, since pydantic and the
full config come later. A session whose folders or machine turn out not to allow the sandbox says so in a notice.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any

from coder_agent.sandbox import probe
from coder_agent.sandbox.cgroups import can_limit_memory


def declared(user_config: Path) -> dict[str, Any]:
    """The RFD-shaped declaration of the sandbox new sessions get."""
    support = probe.quick()
    settings = _sandbox_settings(user_config)
    enabled = settings.get("enabled", True) is not False
    if not (support.available and enabled):
        reason = support.reason if not support.available else "sandbox.enabled is off in the user's config"
        return {
            "mode": "host",
            "guarantees": {"fsIsolation": "none", "netIsolation": "none", "processCaps": False},
            "reason": reason,
        }
    network = "restricted" if settings.get("network") == "proxy" else "denyAll"
    details: dict[str, Any] = {"kind": support.kind, "appliesTo": "commands", "unsandboxedModes": ["full-auto"]}
    if support.kind == "landlock":
        details["landlockAbi"] = support.landlock_abi
        details["processes"] = {
            "pidNamespacePerCommand": True,
            "signalsContained": True,  # outside pids do not exist in the namespace, whatever the Landlock ABI
            "leftoversEndWithCommand": True,
            "memoryLimit": can_limit_memory(),
            "fileLeases": "refused",
            "advisoryLocksOnReadableFilesOutside": "held while the command runs",
            "coreDumps": "none",
            "inheritedDescriptors": "closed",
        }
        details["unsandboxedLeftovers"] = "ended by a subreaper supervisor, unless started through a service outside"
    else:
        details["processes"] = {"signalsContained": True, "leftoversEndWithCommand": "its process group only"}
    return {
        "mode": "custom",
        "guarantees": {"fsIsolation": "workspace", "netIsolation": network, "processCaps": True},
        "coderAgent": details,
    }


def _sandbox_settings(user_config: Path) -> dict[str, Any]:
    found: dict[str, Any] = {}
    files = [user_config]
    if named := os.environ.get("CODER_AGENT_CONFIG", "").strip():
        files.append(Path(named).expanduser())
    for path in files:
        try:
            with path.open("rb") as handle:
                section = tomllib.load(handle).get("sandbox", {})
        except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
            continue
        if isinstance(section, dict):
            found.update(section)
    return found
