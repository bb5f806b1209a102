"""The session's MCP servers, as one package; the only place that imports the `mcp` SDK, and only lazily.

- `types`: the vocabulary the rest of the agent uses (specs, tools, statuses, results, prompt infos, `McpError`).
- `hub`: `McpHub`, one session's servers: connect, call, restart, prompts, close.
- `connection`: one connection attempt in the task that owns it, and the wording of failures.
- `stdio`: the stdio transport (spawn, pumps, stop), on `coder_agent.process`.
- `results`: MCP results as parts for the model and blocks for the editor, truncated.
- `support`: which transports are installed, answered without importing `mcp` (it is on the `initialize` path).

This file imports nothing, so `coder_agent.mcp.support` stays cheap.
"""
