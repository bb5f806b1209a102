"""The base of every ACP wire model: camelCase on the wire, None omitted, `_meta` carried through.

Models are built lazily (`defer_build`), so defining dozens of them costs nothing at startup; each is
compiled the first time it is used. Unknown fields from the peer are ignored, as the schema advises.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel


class AcpModel(BaseModel):
    """An ACP object. `meta` is the spec's `_meta`: opaque, passed through, never a parameter."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
        extra="ignore",
        defer_build=True,
    )

    meta: dict[str, Any] | None = Field(default=None, alias="_meta")

    def wire(self) -> dict[str, Any]:
        """This object as JSON for the wire: camelCase keys, None fields left out."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)
