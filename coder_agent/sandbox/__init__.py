"""The sandbox: walls the operating system enforces around every command the agent runs (README, *The sandbox*).

Two halves. What runs in the command's own process before it becomes the command — `enter` (the launcher, and the
fork server with `--serve`), `forkserver`, `linux`, `landlock`, `seccomp`, `forwarder`, `supervisor` (a command's
processes kept together), `spec` — uses the standard library only and is started as `python -I -S`, so it imports
nothing from site-packages (an import-linter contract holds it). What runs in the agent — `probe`, `settings`,
`walls`, `command`, `proxy` (with `interfaces` and `client_hello`), `spawner`, `cgroups`, `seatbelt`,
`declaration` — decides the walls, keeps a session's private folder, proxy and fork server, and tells the editor
what holds.

Why our own Landlock and seccomp calls rather than a binding: the launcher starts for every command in the
editor's terminal, where an import counts. `landlockpy` (every ABI) and `landlock` (file system only, a development
release) each take ~33 ms to import, more than the whole launcher; `sandlock` brings a 13 MB native supervisor and
needs Landlock ABI 6; bubblewrap is a separate program most machines lack (this one included). The system calls
involved are few and small: three for Landlock, one `prctl` for a BPF program built from a table.
"""
