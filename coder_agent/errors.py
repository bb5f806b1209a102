"""Errors that travel on the wire as JSON-RPC errors, and the codes ACP gives them.

    RpcError                      code, message, data: what a response's `error` carries
    ├── ParseError                -32700  the line is not JSON
    ├── InvalidRequest            -32600  JSON, but not a JSON-RPC request
    ├── MethodNotFound            -32601  unknown method (also unknown `_` extensions)
    ├── InvalidParams             -32602  params that do not fit the method
    ├── InternalError             -32603  our bug; the traceback goes to the log, never the wire
    ├── AuthRequired              -32000  no usable model credentials
    ├── ConfigInvalid             -32001  the config (a file, a variable, a flag, the model string) needs fixing
    ├── ResourceNotFound          -32002  e.g. an unknown sessionId
    ├── ModelUnavailable          -32003  the model call failed for good (unreachable server, provider error)
    ├── RequestCancelled          -32800  a request cancelled by `$/cancel_request` or shutdown
    └── ClientError               the client answered one of our requests with an error
        └── ClientTimeout         the client did not answer one of our requests in time

Tool failures are not protocol errors: they become tool results the model reads. Their one root is here,

    CallFailed                    a tool call failed; the message is for the model, `shown` for the user
    ├── tools.calls.ToolError     raised by the tools themselves
    └── the mechanisms' errors    BridgeError, EditError, SearchError, FetchError, TargetError, McpError

and the tool executor is the one place that turns a `CallFailed` into a failed result, so no tool translates
the errors of what it uses.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar


class CallFailed(Exception):
    """A tool call failed in a way the model should read and act on (the message says what to do next).

    `shown` is what the user reads when it should be shorter than what the model reads (the default: the same).
    """

    def __init__(self, message: str, shown: str | None = None) -> None:
        super().__init__(message)
        self.shown = shown or message


class RpcError(Exception):
    """An error with a JSON-RPC code; raise it from a handler to answer with it."""

    code: ClassVar[int] = -32603
    default_message: ClassVar[str] = "Internal error"

    def __init__(self, message: str | None = None, data: Any = None) -> None:
        self.message = message or self.default_message
        self.data = data
        super().__init__(self.message)

    def to_wire(self) -> dict[str, Any]:
        """The `error` object of a JSON-RPC response."""
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


class ParseError(RpcError):
    code = -32700
    default_message = "Parse error"


class InvalidRequest(RpcError):
    code = -32600
    default_message = "Invalid request"


class MethodNotFound(RpcError):
    code = -32601
    default_message = "Method not found"


class InvalidParams(RpcError):
    code = -32602
    default_message = "Invalid params"


class InternalError(RpcError):
    code = -32603
    default_message = "Internal error"


class AuthRequired(RpcError):
    code = -32000
    default_message = "Authentication required"


class ConfigInvalid(RpcError):
    """The configuration cannot work; the message names the file or variable, the field, and the fix."""

    code = -32001
    default_message = "Invalid configuration"


class ResourceNotFound(RpcError):
    code = -32002
    default_message = "Resource not found"


class ModelUnavailable(RpcError):
    """The model could not answer (after any retries); the message is one sentence for the user, with the fix."""

    code = -32003
    default_message = "The model call failed"


class RequestCancelled(RpcError):
    code = -32800
    default_message = "Request cancelled"


class ClientError(RpcError):
    """The client answered our request with an error; `code` is the client's, per instance."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message, data)
        self.code = code  # type: ignore[misc]


class ClientTimeout(ClientError):
    """The client did not answer our request within its timeout."""

    def __init__(self, method: str, timeout: float) -> None:
        super().__init__(-32603, f"The client did not answer {method} within {timeout:g} s")


@dataclass(frozen=True)
class FieldProblem:
    """One field a pydantic validation refused: where (`permissions.allow[0]`), why, and pydantic's error type."""

    field: str
    message: str
    kind: str
    loc: tuple[int | str, ...]


def field_problems(exc: Any) -> list[FieldProblem]:
    """The problems of a pydantic `ValidationError`, never with the input values (which may hold secrets).

    Takes the error without importing pydantic, which this module must not load (it is on the startup path).
    """
    problems = []
    for error in exc.errors(include_url=False, include_input=False, include_context=False):
        loc = tuple(error["loc"])
        field = ""
        for part in loc:
            field += f"[{part}]" if isinstance(part, int) else (f".{part}" if field else str(part))
        problems.append(FieldProblem(field, str(error["msg"]).removeprefix("Value error, "), str(error["type"]), loc))
    return problems
