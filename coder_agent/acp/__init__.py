"""The ACP adapter: `initialize`, the method table, and the client's methods as typed calls."""
