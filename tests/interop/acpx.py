"""Running `acpx` (the headless ACP client from npm) with `coder-agent` as its agent, and reading what it prints.

`acpx --agent '<command>'` runs any ACP agent; with `--format json` it prints every JSON-RPC frame of the
connection, both ways, one per line. `Transcript` splits them back into the client's and the agent's and checks
each against the ACP schema (`tests/support/conformance.py`). Both sides number their requests from 0, so an answer
goes to the newest unanswered request of that id.

acpx is found on PATH (`.ci/run` installs it from npm into a folder of its own). Without it the tests skip, unless
`INTEROP_TESTS_REQUIRE_TOOLS` is set, as CI sets it: then they fail.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.support.acp_schemas import method_table
from tests.support.conformance import Conformance

REQUIRE = "INTEROP_TESTS_REQUIRE_TOOLS"


def acpx_command() -> str:
    """The `acpx` on PATH; skips the test without it (fails when CI said it installed it)."""
    found = shutil.which("acpx")
    if found is None:
        message = "acpx is not on PATH (npm install acpx; .ci/run does)"
        if os.environ.get(REQUIRE):
            pytest.fail(f"{message}, and {REQUIRE} is set")
        pytest.skip(message)
    return found


def acpx_args(work: Path, *options: str) -> list[str]:
    """acpx running `python -m coder_agent` in `work`, printing the frames as JSON lines."""
    agent = shlex.join([sys.executable, "-m", "coder_agent"])
    return [acpx_command(), "--agent", agent, "--cwd", str(work), "--format", "json", *options]


def _agent_handles(method: str) -> bool:
    """Whether the agent is the side that handles `method` (else the client does)."""
    return any(side == "agent" and name == method for side, _kind, name in method_table(unstable=True))


@dataclass
class Transcript:
    """The frames acpx printed, split by sender and checked against the schema as they are read."""

    from_agent: list[dict[str, Any]] = field(default_factory=list)
    from_client: list[dict[str, Any]] = field(default_factory=list)
    others: list[str] = field(default_factory=list)
    _conformance: Conformance = field(default_factory=Conformance)
    _open: list[tuple[object, str]] = field(default_factory=list)  # (id, who must answer), oldest first

    @classmethod
    def of(cls, output: str) -> Transcript:
        transcript = cls()
        for line in output.splitlines():
            transcript.add(line)
        return transcript

    def add(self, line: str) -> None:
        try:
            frame = json.loads(line)
        except json.JSONDecodeError:
            self.others.append(line)
            return
        if not isinstance(frame, dict) or frame.get("jsonrpc") != "2.0":
            self.others.append(line)
            return
        if "method" in frame:
            sender = "client" if _agent_handles(frame["method"]) else "agent"
            if "id" in frame:
                self._open.append((frame["id"], "agent" if sender == "client" else "client"))
        else:
            index = max((i for i, (rid, _) in enumerate(self._open) if rid == frame.get("id")), default=None)
            assert index is not None, f"an answer to no request: {line}"
            sender = self._open.pop(index)[1]
        if sender == "agent":
            self._conformance.check_agent_to_client(frame)
            self.from_agent.append(frame)
        else:
            self._conformance.check_client_to_agent(frame)
            self.from_client.append(frame)

    def updates(self, kind: str | None = None) -> list[dict[str, Any]]:
        found = [f["params"]["update"] for f in self.from_agent if f.get("method") == "session/update"]
        return [u for u in found if kind is None or u["sessionUpdate"] == kind]

    def agent_text(self) -> str:
        return "".join(u["content"].get("text", "") for u in self.updates("agent_message_chunk"))

    def calls(self, method: str) -> list[dict[str, Any]]:
        return [f for f in self.from_agent if f.get("method") == method]

    def answer_to(self, method: str) -> dict[str, Any]:
        """The agent's answer to the client's (last) `method` request."""
        [request_id] = [f["id"] for f in self.from_client if f.get("method") == method][-1:]
        return next(f for f in reversed(self.from_agent) if "method" not in f and f.get("id") == request_id)
