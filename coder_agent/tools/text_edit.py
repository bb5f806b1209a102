"""Moved to `coder_agent.tools.editing`; this alias keeps the old import path working until its importers move."""

from coder_agent.tools.editing import Edit, EditError, apply_edits

__all__ = ["Edit", "EditError", "apply_edits"]
