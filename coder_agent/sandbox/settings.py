"""The `[sandbox]` section of the config: what the walls let through, beyond the session's own folders.

A project file may not set any of it (`config.PROJECT_FILE_IGNORES`): a cloned repository must not widen the walls
that contain the commands it asks for.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

REGISTRIES = "@registries"
"""The `allow_hosts` preset for package registries."""
REGISTRY_HOSTS = (
    "pypi.org",
    "files.pythonhosted.org",
    "registry.npmjs.org",
    "registry.yarnpkg.com",
    "crates.io",
    "index.crates.io",
    "static.crates.io",
    "proxy.golang.org",
    "sum.golang.org",
    "rubygems.org",
    "repo.maven.apache.org",
    "repo1.maven.org",
    "deb.debian.org",
    "archive.ubuntu.com",
)
PRESETS = {REGISTRIES: REGISTRY_HOSTS}

HOME_READABLE = (
    # git: the identity and settings `git commit` needs (never ~/.config/git/credentials)
    "~/.gitconfig",
    "~/.config/git/config",
    "~/.config/git/ignore",
    "~/.config/git/attributes",
    "~/.gitignore",
    "~/.gitignore_global",
    "~/.gitattributes",
    # the terminal, the editor's conventions, and the versions a version manager picks
    "~/.inputrc",
    "~/.terminfo",
    "~/.editorconfig",
    "~/.python-version",
    "~/.tool-versions",
    "~/.nvmrc",
    "~/.node-version",
    "~/.ruby-version",
    "~/.java-version",
    # programs installed for the user
    "~/bin",
    "~/.local/bin",
    "~/.local/lib",
    # Python: pyenv, uv's interpreters and tools, pipx, pipenv, conda and the like
    "~/.pyenv",
    "~/.local/share/uv/python",
    "~/.local/share/uv/tools",
    "~/.local/pipx",
    "~/.local/share/pipx",
    "~/.local/share/virtualenvs",
    "~/.local/share/pypoetry",
    "~/.rye",
    "~/.conda",
    "~/miniconda3",
    "~/anaconda3",
    "~/miniforge3",
    "~/mambaforge",
    "~/Library/Python",
    # JavaScript: nvm, volta, fnm, bun, deno, pnpm, global npm prefixes
    "~/.nvm",
    "~/.volta",
    "~/.fnm",
    "~/.local/share/fnm",
    "~/.bun",
    "~/.deno",
    "~/.local/share/pnpm",
    "~/Library/pnpm",
    "~/.npm-global",
    "~/.npm-packages",
    "~/.yarn/bin",
    # Rust (CARGO_HOME itself is the sandbox's own: only the programs in ~/.cargo/bin are read)
    "~/.rustup",
    "~/.cargo/bin",
    # Go, Java and the JVM, Ruby, .NET, Haskell, Lean; version managers of everything
    "~/go/bin",
    "~/sdk",
    "~/.goenv",
    "~/.sdkman",
    "~/.jdks",
    "~/Library/Java",
    "~/.m2/repository",
    "~/.gradle/wrapper",
    "~/.gradle/caches",
    "~/.gradle/jdks",
    "~/.rbenv",
    "~/.rvm",
    "~/.gem",
    "~/.local/share/gem",
    "~/.dotnet",
    "~/.nuget/packages",
    "~/.ghcup",
    "~/.elan",
    "~/.asdf",
    "~/.local/share/mise",
    "~/.nix-profile",
    "~/.local/state/nix/profile",
    "~/.guix-profile",
    # fonts (plotting libraries' tests)
    "~/.fonts",
    "~/.local/share/fonts",
    "~/Library/Fonts",
)
"""What sandboxed commands may read of the home folder (the rest of it is kept out): the toolchains, version
managers and settings that builds, tests and `git commit` need, and nothing that holds a key or a token (the
kept-out paths below stay out inside these too). `tests/sandbox/test_home.py` runs the ordinary work that needs
them. A path that does not exist is skipped; `sandbox.allow_read` adds more."""

DEFAULT_DENY_READ = (
    "~/.ssh/",
    "~/.gnupg/",
    "~/.aws/",
    "~/.azure/",
    "~/.config/gcloud/",
    "~/.kube/",
    "~/.docker/config.json",
    "~/.netrc",
    "~/.git-credentials",
    "~/.config/git/credentials",
    "~/.config/gh/",
    "~/.config/hub/",
    "~/.config/glab-cli/",
    "~/.config/github-copilot/",
    "~/.npmrc",
    "~/.yarnrc.yml",
    "~/.pypirc",
    "~/.config/pip/",
    "~/.pip/",
    "~/.config/uv/uv.toml",
    "~/.cargo/credentials",
    "~/.cargo/credentials.toml",
    "~/.gem/credentials",
    "~/.local/share/gem/credentials",
    "~/.m2/settings.xml",
    "~/.m2/settings-security.xml",
    "~/.gradle/gradle.properties",
    "~/.nuget/NuGet/",
    "~/.pub-cache/credentials.json",
    "~/.config/sops/",
    "~/.config/age/",
    "~/.vault-token",
    "~/.pgpass",
    "~/.my.cnf",
    "~/.cache/huggingface/",
    "~/.huggingface/",
    "~/.terraform.d/",
    "~/.terraformrc",
    "~/.config/rclone/",
    "~/.config/containers/auth.json",
    "~/.s3cfg",
    "~/.boto",
    "~/.oci/",
    "~/.kaggle/",
    "~/.config/kaggle/",
    "~/.claude/",
    "~/.claude.json",
    "~/.codex/",
    "~/.config/op/",
    "~/.password-store/",
    "~/.local/share/keyrings/",
    "~/.bash_history",
    "~/.zsh_history",
    "~/.zhistory",
    "~/.histfile",
    "~/.local/share/fish/fish_history",
    "~/.python_history",
    "~/.node_repl_history",
    "~/.psql_history",
    "~/.mysql_history",
    "~/.sqlite_history",
    "~/.lesshst",
    "~/.viminfo",
    "~/.mozilla/",
    "~/.config/google-chrome/",
    "~/.config/chromium/",
    "~/.config/BraveSoftware/",
    "~/.config/microsoft-edge/",
    "~/snap/firefox/",
    "~/Library/Application Support/Google/Chrome/",
    "~/Library/Application Support/Firefox/",
    "~/Library/Keychains/",
    "~/.nvm/versions/node/*/etc/npmrc",
    "~/.volta/tools/image/node/*/etc/npmrc",
    "~/.pyenv/versions/*/pip.conf",
    "/etc/shadow",
    "/etc/gshadow",
    "/etc/shadow-",
    "/etc/gshadow-",
    "/etc/ssh/ssh_host_rsa_key",
    "/etc/ssh/ssh_host_ecdsa_key",
    "/etc/ssh/ssh_host_ed25519_key",
)
"""Kept out of reach of sandboxed commands wherever they are (keys, tokens, credentials, shell history, browser
profiles): in the parts of the home folder that are readable (`HOME_READABLE`, `sandbox.allow_read`), and outside
it. The agent's own config, data, state, caches and logs are added to these. A `*` matches one name (looked up when
the session opens); paths that do not exist yet are kept out too, should they appear. A folder ends with `/`."""


class SandboxConfig(BaseModel):
    """How commands are contained (see README, *The sandbox*)."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = True
    """Run commands inside the sandbox where this machine supports it. Off: every command runs with your account's
    rights (and the `auto` mode is not offered)."""

    network: Literal["off", "proxy"] = "off"
    """"off": a sandboxed command reaches no network (servers the session's commands start on 127.0.0.1 reach
    each other, and nothing else does).
    "proxy": it reaches the hosts in `allow_hosts`, through the agent's proxy, and nothing else."""

    allow_hosts: list[str] = Field(default_factory=list)
    """Hosts a sandboxed command may reach through the proxy: names ("pypi.org"), wildcards ("*.github.com"), or
    "@registries" for the package registries (PyPI, npm, crates.io, Go, RubyGems, Maven Central, Debian, Ubuntu);
    on ports 80 and 443, or on the one an entry names after a colon ("registry.example.com:8443")."""

    writable: list[str] = Field(default_factory=list)
    """More folders sandboxed commands may write to, besides the session's folders, a private temp folder and the
    sandbox's own caches for package managers."""

    deny_read: list[str] = Field(default_factory=list)
    """More paths kept out of reach (read and write), besides the home folder and the defaults (keys, tokens,
    credentials, shell history, browser profiles)."""

    allow_read: list[str] = Field(default_factory=list)
    """More of the home folder to let sandboxed commands read, besides the toolchains and settings builds need
    ("~/.config/mise"; "~" for all of it but the kept-out paths), and kept-out defaults to let them read after all
    (as written in the defaults, e.g. "~/.npmrc")."""

    allow_unix_sockets: bool = False
    """Let sandboxed commands open UNIX sockets. Off by default: a socket outside the walls (a desktop bus, the
    Docker daemon, an ssh agent, tmux) could run commands outside them."""

    max_processes: int = Field(default=4096, ge=16)
    """The most processes (threads included) the sandboxed commands of one session may run at once."""

    max_file_mb: int = Field(default=4096, ge=1)
    """The largest file a sandboxed command may write, in MiB."""

    max_memory_mb: int | None = Field(default=None, ge=64)
    """The most memory the sandboxed commands of one session may use together, in MiB (and as much again in swap);
    unset: three quarters of this machine's memory. Held where the agent can make a cgroup (see README, *Limits*)."""

    pass_env: list[str] = Field(default_factory=list)
    """Environment variables every process the agent starts gets although their names or values look secret
    (`GH_TOKEN` for a `gh` you run through the agent, say): commands, MCP servers, the agent's own git. Only your
    own config can set it; model keys pass only if named here."""

    mcp_servers: bool = False
    """Also start the editor's stdio MCP servers inside the sandbox (they then reach no network unless `network`
    is "proxy" and their hosts are allowed; each has a loopback of its own, out of the commands' reach)."""

    @field_validator("allow_hosts")
    @classmethod
    def _known_presets(cls, value: list[str]) -> list[str]:
        for host in value:
            if host.startswith("@") and host not in PRESETS:
                raise ValueError(f"unknown preset {host!r} (known: {', '.join(PRESETS)})")
            if not host.strip() or "/" in host or " " in host:
                raise ValueError(f"{host!r} is not a host name")
            port = host.rpartition("]")[2].rpartition(":")[2] if host.count(":") == 1 or "]:" in host else ""
            if port and not (port.isdigit() and 0 < int(port) < 65536):
                raise ValueError(f"{host!r}: the port after the colon must be a number from 1 to 65535")
        return value

    def hosts(self) -> tuple[str, ...]:
        """`allow_hosts` with the presets spelled out."""
        out: list[str] = []
        for host in self.allow_hosts:
            out.extend(PRESETS.get(host, (host,)))
        return tuple(dict.fromkeys(h.lower().rstrip(".") for h in out))
