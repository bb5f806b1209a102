"""What a fake home folder holds for the sandbox tests (`walled.make_layout` lays it out): the default kept-out
paths (files or folders, with a secret in each), the credential files each tried by a row of `test_escapes`, and
what builds read there, beside them."""

from __future__ import annotations

from coder_agent.sandbox.settings import DEFAULT_DENY_READ

FOLDER_LIKE = {raw for raw in DEFAULT_DENY_READ if raw.endswith("/")}
"""Default kept-out entries that are folders (the others are files); each gets a secret file inside."""
SECRET_FILE_IN = {
    "~/.ssh": "id_rsa",
    "~/.aws": "credentials",
    "~/.config/gcloud": "credentials.db",
    "~/.config/sops": "age/keys.txt",
    "~/.cache/huggingface": "token",
    "~/.terraform.d": "credentials.tfrc.json",
    "~/.config/rclone": "rclone.conf",
    "~/.claude": ".credentials.json",
    "~/.codex": "auth.json",
    "~/.config/github-copilot": "hosts.json",
    "~/.kaggle": "kaggle.json",
}
PATTERN_NAME = "v20.0.0"
"""What a `*` of a kept-out pattern stands for in the layout (`~/.nvm/versions/node/*/etc/npmrc`)."""
CREDENTIAL_FILES = {
    "git-credentials-xdg": "~/.config/git/credentials",
    "cargo-credentials": "~/.cargo/credentials.toml",
    "sops-age-keys": "~/.config/sops/age/keys.txt",
    "vault-token": "~/.vault-token",
    "pgpass": "~/.pgpass",
    "maven-settings-security": "~/.m2/settings-security.xml",
    "maven-settings": "~/.m2/settings.xml",
    "gem-credentials": "~/.gem/credentials",
    "huggingface-token": "~/.cache/huggingface/token",
    "terraform-credentials": "~/.terraform.d/credentials.tfrc.json",
    "rclone-config": "~/.config/rclone/rclone.conf",
    "podman-auth": "~/.config/containers/auth.json",
    "claude-credentials": "~/.claude/.credentials.json",
    "codex-auth": "~/.codex/auth.json",
    "copilot-hosts": "~/.config/github-copilot/hosts.json",
    "kaggle-token": "~/.kaggle/kaggle.json",
    "bash-history": "~/.bash_history",
    "zsh-history": "~/.zsh_history",
    "global-npmrc-in-nvm": f"~/.nvm/versions/node/{PATTERN_NAME}/etc/npmrc",
    "unlisted-token-in-config": "~/.config/some-new-tool/token",
    "unlisted-notes-in-home": "~/notes/passwords.txt",
    "unlisted-dotfile": "~/.env",
}
"""Credentials a command must not read, each with an attack row in `test_escapes`: the files the issue found
readable (git's, cargo's, sops and age keys, vault, pgpass, maven, gem, huggingface, terraform, rclone, podman,
Claude, Codex, Copilot, Kaggle, shell history), one a version manager's folder holds (npm's global config), and
secrets in no list at all, kept out with the rest of the home folder."""
READABLE_FILES = {
    "~/.gitconfig": "[user]\n\tname = The User\n\temail = user@test.invalid\n",
    "~/.config/git/config": "[core]\n\tautocrlf = input\n",
    "~/.cargo/bin/cargo-hello": "#!/bin/sh\necho hello from cargo bin\n",
    "~/.local/bin/hello": "#!/bin/sh\necho hello from local bin\n",
    f"~/.nvm/versions/node/{PATTERN_NAME}/bin/node-hello": "#!/bin/sh\necho hello from nvm\n",
    "~/.gem/ruby/3.2.0/specifications/readme": "a gem's files\n",
    "~/.rustup/settings.toml": 'default_toolchain = "stable"\n',
}
"""What builds need of a home folder (in `settings.HOME_READABLE`), laid out beside the credentials above."""
