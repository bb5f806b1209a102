"""The help that teaches: what `coder-agent --help` adds after the flags, what `run --help` adds, and the paragraph
the bare command prints when a person starts it on a terminal. Standard library (and platformdirs) only."""

from __future__ import annotations

import json

from coder_agent.headless import snippets

CONFIG_EXAMPLE = "https://github.com/coder-agent/coder-agent/blob/main/config.example.toml"

ENVIRONMENT = (
    ("CODER_AGENT_MODEL", "the model, a litellm model string: anthropic/claude-sonnet-4-5, openai/gpt-4.1, ..."),
    ("CODER_AGENT_API_BASE", "the URL of an OpenAI-compatible server (vLLM, Ollama, llama.cpp, a proxy)"),
    ("CODER_AGENT_API_KEY", "the model's key; else the provider's own variable (ANTHROPIC_API_KEY,"),
    ("", "OPENAI_API_KEY, GEMINI_API_KEY, ...); a self-hosted server needs none"),
    ("CODER_AGENT_MAX_TOKENS", "the most tokens per answer"),
    ("CODER_AGENT_REASONING_EFFORT", "minimal, low, medium or high"),
    ("CODER_AGENT_CONTEXT_WINDOW", "the model's context window, when litellm does not know it"),
    ("CODER_AGENT_CONFIG", "a config file, over the user and project files"),
    ("CODER_AGENT_LOG_FILE", "append logs to this file instead of stderr"),
    ("CODER_AGENT_LOG_LEVEL", "debug, info, warning or error"),
)

TERMINAL_NOTICE = """\
coder-agent is an ACP agent: an editor (Zed, a JetBrains IDE, Neovim, Emacs) starts it and talks JSON-RPC to \
it over stdin and stdout, so there is nothing to type here. To give it a task from this terminal, use \
`coder-agent "your request"` (short for `coder-agent run`; see `coder-agent run --help`); to check the \
model, its key and the endpoint, and to get the settings snippet for your editor, use `coder-agent doctor`. \
`coder-agent sessions` lists this folder's sessions; `coder-agent --help` lists everything. (To speak ACP \
by hand anyway, pipe into it: `cat | coder-agent`.)"""


def _user_config_file() -> str:
    import platformdirs

    return str(platformdirs.user_config_path("coder-agent") / "config.toml")


def main_epilog() -> str:
    """Everything `coder-agent --help` says after the flags."""
    launch = snippets.this_install()
    width = max(len(name) for name, _ in ENVIRONMENT) + 2
    environment = "\n".join(f"  {name:<{width}}{text}" for name, text in ENVIRONMENT)
    self_hosted = json.dumps(snippets.SELF_HOSTED_ENV, indent=2)
    return f"""\
commands:
  (none)    serve ACP on stdin/stdout: what an editor starts
  run       one request without an editor, for a terminal, a script, a git hook or CI (run --help);
            `coder-agent "PROMPT"` is short for it
  sessions  the stored sessions of this folder (--all: every folder's; --json), to --resume
  doctor    check the config, the model, its key and endpoint; print the editor settings for this install
  export    write a stored session out: markdown (to read), atif (Harbor's trajectories) or json
  serve     serve ACP over WebSocket at /acp for an editor on another machine (a bearer token, 127.0.0.1)

environment:
{environment}

config files, each over the one before:
  user      {_user_config_file()}
  project   .coder-agent/config.toml in the session's folder (it cannot set api_base, api_key_env,
            extra_params, default_mode, permissions.allow, [sandbox], [checkers] or [telemetry]; its
            [hooks] run once you trust them)
  then      CODER_AGENT_CONFIG, the variables above, --config FILE, --model
  every field is described in {CONFIG_EXAMPLE}

Zed, in settings.json:
{snippets.indented(snippets.zed(launch, snippets.HOSTED_ENV))}

JetBrains IDEs, in ~/.jetbrains/acp.json (AI Chat > Configure ACP Agents):
{snippets.indented(snippets.jetbrains(launch, {"CODER_AGENT_MODEL": "openai/gpt-4.1", "OPENAI_API_KEY": "sk-..."}))}

A self-hosted server (vLLM, Ollama, llama.cpp; no key needed): the same entry with
{snippets.indented(f'"env": {self_hosted}')}

`coder-agent doctor` prints these for your model and checks that it answers."""


RUN_EPILOG = """\
modes (--mode):
  read-only     reads and searches; edits and commands are refused (the default without a terminal,
                unless --allow rules are given: then default, where only what they allow runs)
  plan          explores read-only and ends with a plan: approved on a terminal, or the answer
  default       asks on the terminal before every edit, command and fetch (the default on a terminal,
                unless the config's default_mode says otherwise)
  accept-edits  edits without asking; asks before commands and fetches
  auto          edits and sandboxed commands without asking; a command that must leave the sandbox asks
                (the default in CI, where CI is set, when the sandbox works here; read-only otherwise)
  full-auto     edits, commands and fetches without asking (commands run outside the sandbox, with your rights)
  A question that cannot be asked (no terminal) stops the run with status 3; --allow lets such calls
  through, with the rule strings of the config's [permissions] (edit:src/**, execute:pytest, fetch:host);
  a command that must leave the sandbox needs --mode full-auto. A mode not chosen is said at the start.

output (--output-format):
  text          the answer on stdout; tool calls, diffs and the plan on stderr
  json          one object at the end: answer, stop_reason, session_id, usage, cost, files_changed
  --output-schema FILE  the answer must be JSON valid against this JSON Schema: printed alone
                (text), or as structured_output; one retry, then exit status 4
  stream-json   one JSON object per line as things happen; the last one is the json object

exit status:
  0 the model finished; 1 an error, or it stopped short (max turns, output limit); 2 a usage error;
  3 a permission no one could give stopped the work (--continue --allow RULE, no prompt: it runs and goes on),
  or the mode refused a file change the task needed; 4 the answer is not valid against --output-schema;
  130 Ctrl-C

examples:
  coder-agent run "explain what src/cache.py does"
  coder-agent "explain what src/cache.py does"                            # the same
  cat calc.py | coder-agent run "explain this"                            # piped text joins the prompt
  { echo "Review this change:"; git diff --cached; } | coder-agent run     # the prompt from stdin
  coder-agent run --output-format json "list the TODOs" | jq -r .answer
  coder-agent run --output-schema todos.schema.json "list the TODOs" | jq '.todos[]'   # JSON, validated
  coder-agent run --mode accept-edits --allow "execute:pytest" "make the tests pass"
  coder-agent run --mcp-config .mcp.json --add-dir ../shared "use the issue tracker's tools"
  coder-agent run --continue "now add a test for the empty case"
  coder-agent run --continue --allow "execute:pytest"                     # run the call it stopped at, go on
  coder-agent run --resume sess_1234 --model openai/gpt-4.1 "try again"
  coder-agent run --resume                                                # pick the session on the terminal
"""
