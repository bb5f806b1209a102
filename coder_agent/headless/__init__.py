"""The agent from a terminal, without an editor: `coder-agent run`, `coder-agent sessions` and `coder-agent doctor`.

An adapter over `agent/`, beside `acp/`: the same `SessionManager`, runner, tools and session store as an
editor's connection, with a `LocalBridge` (the disk, local process groups) in place of the ACP client.

* `run_options` — the `run` flags made into `RunOptions` (the prompt from the argument or stdin, the mode);
* `piped_input` — what is piped on stdin, read bounded and never waited on forever;
* `mcp_config` — `--mcp-config` files (the editors' and peers' JSON shapes) as ACP `McpServer`s;
* `run` — the command: open or reopen a session, one prompt (or go on from a stopped call), Ctrl-C, the exit code;
* `sessions` — the stored sessions listed (`coder-agent sessions`), resolved by the start of an id, or picked;
* `terminal_permissions` — permission questions: asked on the terminal, or the turn stopped when there is no one
  to ask;
* `terminal_questions` — the model's and MCP servers' questions (forms, web pages), asked on the terminal;
* `terminal_input` — a typed line, with keys typed ahead of the question discarded;
* `render` — `--output-format text`: the answer on stdout; tool calls, their output, diffs, the plan on stderr;
* `markdown_blocks` — a streamed answer cut into whole Markdown blocks, for rendering on a terminal;
* `events` — what a run adds up to (answer, usage, files changed) and the `json` / `stream-json` formats;
* `doctor` — the setup checked in plain words;
* `snippets` and `help` — how editors start this install, and the help text (standard library only: `--help`
  and the bare command's terminal notice must stay fast).
"""
