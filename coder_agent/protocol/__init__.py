"""The ACP wire vocabulary: pydantic models of what crosses the wire (`base`, `content`, and by area
`initialize`, `sessions`, `updates`, `client_calls`, all imported from `schema`).

This package imports nothing else of coder-agent; every layer may use it. Importing the package itself
is free (no pydantic): `initialize` is answered from `PROTOCOL_VERSION` before the models load.
"""

PROTOCOL_VERSION = 1
"""The ACP protocol version this agent speaks."""
