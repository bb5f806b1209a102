"""coder-agent: an LLM coding agent that speaks the Agent Client Protocol (ACP) over stdio.

Importing the package has no side effects and pulls in nothing heavy: litellm and mcp are
loaded lazily by the modules that need them.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
