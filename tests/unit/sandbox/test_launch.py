"""Commands run inside real walls, both ways a command starts: through the launcher (the editor's terminal runs it)
and through the session's fork server (local commands). The escape table is `tests/sandbox/`; here, that both paths
put up the same walls, fail closed, restore the signals Python ignores, and end cleanly."""

from __future__ import annotations

import os
import subprocess
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import anyio
import pytest

from coder_agent.sandbox import probe
from coder_agent.sandbox.command import CommandSandbox
from coder_agent.sandbox.settings import SandboxConfig
from coder_agent.session.local_bridge import LocalBridge

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(not probe.check().available, reason=f"no sandbox here: {probe.check().reason}"),
]


@dataclass
class Box:
    sandbox: CommandSandbox
    work: Path
    outside: Path
    served: bool

    async def run(self, command: str, timeout: float = 30) -> tuple[int | None, str]:
        if self.served:
            result = await LocalBridge().run_command(
                command, cwd=self.work, timeout=timeout, show=_nothing, sandbox=self.sandbox
            )
            return result.exit_code, result.output
        argv, env = await self.sandbox.launch(["bash", "-c", command])
        done = await anyio.run_process(
            argv, env={**os.environ, **env}, cwd=self.work, check=False, stderr=subprocess.STDOUT
        )
        return done.returncode, done.stdout.decode()


async def _nothing(content: object) -> None:
    return None


@pytest.fixture(params=["fork-server", "launcher"])
async def box(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Box]:
    work = tmp_path / "work"
    work.mkdir()
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("keep")
    async with anyio.create_task_group() as tasks:
        sandbox = await CommandSandbox.open((work,), SandboxConfig(max_processes=64), probe.check(), tasks)
        try:
            yield Box(sandbox, work, outside, request.param == "fork-server")
        finally:
            await sandbox.aclose()
            tasks.cancel_scope.cancel()


async def test_inside_is_writable_and_outside_is_not(box: Box) -> None:
    code, output = await box.run(f"echo hi > made.txt && cat made.txt && echo no > {box.outside}/keep.txt")
    assert (box.work / "made.txt").read_text() == "hi\n"
    assert code != 0 and ("Permission denied" in output or "Read-only" in output)
    assert (box.outside / "keep.txt").read_text() == "keep"


async def test_git_hooks_stay_read_only_and_tmpdir_is_private(box: Box) -> None:
    code, output = await box.run('echo evil > .git/hooks/pre-commit; echo tmp > "$TMPDIR/t" && cat "$TMPDIR/t"')
    assert not (box.work / ".git/hooks/pre-commit").exists()
    assert "Read-only file system" in output and output.rstrip().endswith("tmp")
    assert await anyio.Path(box.sandbox.walls.temp, "t").read_text() == "tmp\n"


async def test_no_network_but_a_private_loopback(box: Box) -> None:
    server = (
        'python3 -c \'import socket,threading;s=socket.socket();s.bind(("127.0.0.1",0));s.listen();'
        'p=s.getsockname()[1];threading.Thread(target=lambda:s.accept()[0].sendall(b"pong"),daemon=True).start();'
        'c=socket.create_connection(("127.0.0.1",p));print(c.recv(4).decode())\''
    )
    code, output = await box.run(
        f"{server} && python3 -c 'import socket; socket.create_connection((\"1.1.1.1\", 53), 3)'"
    )
    assert output.startswith("pong") and "Network is unreachable" in output and code != 0


async def test_the_signals_python_ignores_are_restored(box: Box) -> None:
    code, output = await box.run("yes | head -n 1; trap -p PIPE; echo done")
    assert code == 0 and output.split() == ["y", "done"]  # no ignored SIGPIPE left for bash to report


FORK_STORM = """
import os, signal, time
forked = 0
try:
    for _ in range(200):
        if os.fork() == 0:
            time.sleep(60)
            os._exit(0)
        forked += 1
except OSError as exc:
    print("stopped after", forked, exc.strerror, flush=True)
else:
    print("forked", forked, flush=True)
os.killpg(0, signal.SIGKILL)
"""


async def test_a_fork_storm_is_held_to_the_limit(box: Box) -> None:
    if os.getuid() == 0 and (box.sandbox.group is None or box.sandbox.group.max_processes is None):
        pytest.skip("root is not held by RLIMIT_NPROC, and no pids cgroup can be made here")
    code, output = await box.run(f"python3 -c '{FORK_STORM}'", timeout=60)
    words = output.split()
    assert words[:2] == ["stopped", "after"] and int(words[2]) < 64, output
    assert "Resource temporarily unavailable" in output


async def test_walls_that_cannot_go_up_run_nothing(box: Box, tmp_path: Path) -> None:
    spec_cgroup = tmp_path / "no-such-cgroup"
    argv, env = await box.sandbox.launch(["bash", "-c", f"touch {box.work}/ran"])
    from coder_agent.sandbox.spec import SPEC_VARIABLE, decode, encode

    walls = decode(env[SPEC_VARIABLE])
    walls["cgroup"] = [str(spec_cgroup)]
    env[SPEC_VARIABLE] = encode(walls)
    done = await anyio.run_process(argv, env={**os.environ, **env}, cwd=box.work, check=False)
    assert done.returncode == 125 and done.stderr.decode().startswith("coder-agent sandbox: joining")
    assert not (box.work / "ran").exists()


async def test_the_fork_server_holds_no_key(box: Box, monkeypatch: pytest.MonkeyPatch) -> None:
    if not box.served:
        pytest.skip("the launcher gets the command's own environment")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-secret-value-0123456789")
    await box.run("true")  # the server starts here, with the key in the agent's environment
    spawner = box.sandbox.spawner
    assert spawner is not None and spawner._server is not None
    environ = await anyio.Path(f"/proc/{spawner._server.pid}/environ").read_bytes()
    assert b"sk-ant-secret-value" not in environ and b"ANTHROPIC_API_KEY" not in environ
