"""JSON-RPC 2.0 over newline-delimited byte streams; knows nothing of ACP."""

from coder_agent.rpc.connection import Connection, Dispatcher, FollowedBy

__all__ = ["Connection", "Dispatcher", "FollowedBy"]
