"""What a grep asks for, in the one shape both backends take: `GrepQuery`, and the `OutputMode`s."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from coder_agent.tools.search.globs import GlobFilter
from coder_agent.tools.search.scope import Scope

__all__ = ["GrepQuery", "OutputMode"]

OutputMode = Literal["files_with_matches", "content", "count"]


@dataclass(frozen=True)
class GrepQuery:
    """A regex search of `scope`, checked and normalised by `coder_agent.tools.search.grep`."""

    pattern: str
    scope: Scope
    glob_filter: GlobFilter | None
    ignore_case: bool
    mode: OutputMode
    context: int  # lines around each match, in content mode
    timeout: float  # seconds
