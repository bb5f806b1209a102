"""The proxy, the one way from a sandboxed command to the network: a host not allowed, or one that resolves to a
local address, is refused with a 403 that names the setting; and from inside real walls, the proxy is reachable
through the forwarder while a direct connection is not."""

from __future__ import annotations

import os
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from coder_agent.sandbox import probe
from coder_agent.sandbox.command import CommandSandbox, hit_walls
from coder_agent.sandbox.proxy import HostProxy
from coder_agent.sandbox.settings import SandboxConfig

pytestmark = pytest.mark.anyio


@pytest.fixture
async def proxy(tmp_path: Path) -> AsyncIterator[HostProxy]:
    proxy = HostProxy(tmp_path / "proxy.sock", ("pypi.org", "*.example.org", "localhost"))
    async with anyio.create_task_group() as tasks:
        await proxy.serve(tasks)
        yield proxy
        tasks.cancel_scope.cancel()


async def _ask(proxy: HostProxy, request: bytes) -> bytes:
    async with await anyio.connect_unix(proxy.socket_path) as stream:
        await stream.send(request)
        answer = b""
        with anyio.fail_after(10):
            try:
                async for chunk in stream:
                    answer += chunk
            except anyio.EndOfStream:
                pass
    return answer


def test_hosts_match_exactly_or_as_subdomains() -> None:
    proxy = HostProxy(Path("/nowhere"), ("pypi.org", "*.example.org"))
    assert proxy.allows("pypi.org") and proxy.allows("PYPI.org.") and proxy.allows("a.b.example.org")
    assert not proxy.allows("evil-pypi.org") and not proxy.allows("pypi.org.evil.com")
    assert not proxy.allows("example.org") and not proxy.allows("example.org.evil")


@pytest.mark.parametrize(
    ("request_head", "status", "why"),
    [
        (b"CONNECT evil.example.com:443 HTTP/1.1\r\nHost: evil.example.com\r\n\r\n", b"403", b"sandbox.allow_hosts"),
        (b"GET http://evil.example.com/x HTTP/1.1\r\nHost: evil.example.com\r\n\r\n", b"403", b"not an allowed host"),
        (b"CONNECT localhost:22 HTTP/1.1\r\n\r\n", b"403", b"a loopback address"),
        (b"GET /relative HTTP/1.1\r\n\r\n", b"400", b"only CONNECT"),
    ],
)
async def test_refusals_say_why(proxy: HostProxy, request_head: bytes, status: bytes, why: bytes) -> None:
    answer = await _ask(proxy, request_head)
    assert answer.split(b" ")[1] == status and why in answer


async def test_a_bad_port_or_an_endless_head_is_dropped(proxy: HostProxy) -> None:
    assert await _ask(proxy, b"CONNECT pypi.org:99999 HTTP/1.1\r\n\r\n") == b""
    assert await _ask(proxy, b"GET http://pypi.org/" + b"x" * 20_000) == b""


@pytest.mark.skipif(not probe.check().available, reason=f"no sandbox here: {probe.check().reason}")
async def test_inside_the_walls_only_the_proxy_is_reachable(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    settings = SandboxConfig(network="proxy", allow_hosts=["pypi.org"])
    script = (
        "import urllib.request, socket\n"
        "try:\n"
        "    urllib.request.urlopen('http://evil.example.com/', timeout=10)\n"
        "except Exception as exc:\n"
        "    print('proxied:', exc)\n"
        "try:\n"
        "    socket.create_connection(('93.184.215.14', 80), 5)\n"
        "except OSError as exc:\n"
        "    print('direct:', exc.strerror)\n"
    )
    async with anyio.create_task_group() as tasks:
        sandbox = await CommandSandbox.open((work,), settings, probe.check(), tasks)
        try:
            argv, env = await sandbox.launch(["python3", "-c", script])
            done = await anyio.run_process(
                argv, env={**os.environ, **env}, cwd=work, check=False, stderr=subprocess.STDOUT
            )
        finally:
            await sandbox.aclose()
            tasks.cancel_scope.cancel()
    output = done.stdout.decode()
    assert "proxied: HTTP Error 403" in output, output
    assert "direct: Network is unreachable" in output, output
    assert sandbox.proxy is not None and sandbox.proxy.refused == ["evil.example.com"]
    assert hit_walls("urllib.error.HTTPError: HTTP Error 403: Forbidden\nNetwork is unreachable", 1) is not None
