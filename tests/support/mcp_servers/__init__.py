"""MCP servers for the hub's tests and benchmarks, each runnable as `python -m tests.support.mcp_servers.<name>`.

- `basic`: echo, add (structured), image, env_var, annotated tools, an isError tool, `big`, embedded resources,
  `add_tool_later` (list_changed), `timed` (for the overhead bench) and the prompt `review`.
- `crashy`: `ok`, and `die` which ends the process; exits at start when `CRASHY_AT_START` is set.
- `slow_start`: sleeps `SLOW_START_SECONDS` before serving (before importing mcp, so the delay is exact).
- `basic_http`: runs `basic` over streamable HTTP or SSE on 127.0.0.1 in a thread (`serve_http`).
- `tiny`: a hand-written stdio server without the mcp package (starts in ~50 ms), for the connect bench.

Servers print nothing to stdout but protocol messages; diagnostics go to stderr.
"""
