"""The proxy, the one way from a sandboxed command to the network: a host not allowed, or one that resolves to a
local address, is refused with a 403 that names the setting; and from inside real walls, the proxy is reachable
through the forwarder while a direct connection is not."""

from __future__ import annotations

import contextlib
import os
import socket
import ssl
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from coder_agent.sandbox import client_hello, probe
from coder_agent.sandbox.command import CommandSandbox, hit_walls
from coder_agent.sandbox.interfaces import local_addresses
from coder_agent.sandbox.proxy import HostProxy, Refused
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


def test_ports_are_80_and_443_unless_an_entry_names_one() -> None:
    proxy = HostProxy(Path("/nowhere"), ("pypi.org", "registry.example.com:8443", "*.corp.example:5000"))
    assert proxy.allows("pypi.org", 443) and proxy.allows("pypi.org", 80) and not proxy.allows("pypi.org", 22)
    assert proxy.allows("registry.example.com", 8443) and not proxy.allows("registry.example.com", 443)
    assert proxy.allows("a.corp.example", 5000) and not proxy.allows("a.corp.example", 443)


async def test_an_allowed_host_that_is_this_machine_is_refused_on_every_interface() -> None:
    """Not only loopback: every address of every interface (a LAN address, a container bridge's) is this machine,
    whose servers the walls keep commands from; even a host the user allowed by that very address."""
    mine = sorted(str(a) for a in local_addresses() if not a.is_loopback and not a.is_link_local)
    if not mine:
        pytest.skip("this machine has no address but loopback and link-local ones")
    for address in mine:
        literal = f"[{address}]" if ":" in address else address
        with socket.create_server((address, 0), family=socket.AF_INET6 if ":" in address else socket.AF_INET) as srv:
            port = srv.getsockname()[1]
            proxy = HostProxy(Path("/nowhere"), (f"{literal}:{port}",))
            with pytest.raises(Refused, match="an address of this machine"):
                await proxy._open(address, port)
            srv.setblocking(False)
            with pytest.raises(BlockingIOError):
                srv.accept()  # nothing connected


def test_the_server_name_a_tunnel_asks_for_is_read_from_its_client_hello() -> None:
    hello = _client_hello("PyPI.org")
    assert client_hello.server_name(hello) == "pypi.org"
    assert client_hello.server_name(hello[:60]) == client_hello.MORE
    split = b"\x16\x03\x01" + (40).to_bytes(2, "big") + hello[5:45]  # the handshake over two records
    split += b"\x16\x03\x01" + (len(hello) - 45).to_bytes(2, "big") + hello[45:]
    assert client_hello.server_name(split) == "pypi.org"
    assert client_hello.server_name(b"SSH-2.0-OpenSSH_9.6\r\n") == client_hello.NOT_TLS
    with pytest.raises(client_hello.Malformed):
        client_hello.server_name(b"\x16\x03\x01\x00\x05\x02\x00\x00\x01\x00")


def _client_hello(name: str) -> bytes:
    outgoing = ssl.MemoryBIO()
    tls = ssl.create_default_context().wrap_bio(ssl.MemoryBIO(), outgoing, server_hostname=name)
    with contextlib.suppress(ssl.SSLWantReadError):
        tls.do_handshake()
    return outgoing.read()


async def test_a_tunnel_whose_tls_names_another_server_is_closed(tmp_path: Path) -> None:
    """A CONNECT to an allowed host whose ClientHello asks for another server (domain fronting: a shared front
    routes by that name) is closed before a byte of it goes on; the same tunnel asking for the host itself gets the
    server's answer. Needs the network to pypi.org (a package registry)."""
    proxy = HostProxy(tmp_path / "proxy.sock", ("pypi.org",))
    async with anyio.create_task_group() as tasks:
        await proxy.serve(tasks)
        fronted = await _ask(proxy, b"CONNECT pypi.org:443 HTTP/1.1\r\n\r\n" + _client_hello("evil.example.com"))
        if not fronted.startswith(b"HTTP/1.1 200"):
            pytest.skip(f"pypi.org cannot be reached from here: {fronted[:200]!r}")
        assert fronted == b"HTTP/1.1 200 Connection established\r\n\r\n" and proxy.refused == ["pypi.org"]
        tasks.cancel_scope.cancel()


@pytest.mark.parametrize(
    ("request_head", "status", "why"),
    [
        (b"CONNECT evil.example.com:443 HTTP/1.1\r\nHost: evil.example.com\r\n\r\n", b"403", b"sandbox.allow_hosts"),
        (b"GET http://evil.example.com/x HTTP/1.1\r\nHost: evil.example.com\r\n\r\n", b"403", b"not an allowed host"),
        (b"CONNECT localhost:443 HTTP/1.1\r\n\r\n", b"403", b"a loopback address"),
        (b"CONNECT localhost:22 HTTP/1.1\r\n\r\n", b"403", b'add "localhost:22" to sandbox.allow_hosts'),
        (b"GET http://pypi.org:8080/ HTTP/1.1\r\n\r\n", b"403", b"port 8080 of pypi.org is not allowed"),
        (b"CONNECT pypi.org:443 HTTP/1.1\r\nHost: evil.example.com:443\r\n\r\n", b"403", b"the Host header names"),
        (b"CONNECT pypi.org:443 HTTP/1.1\r\nHost: pypi.org:80\r\n\r\n", b"403", b"the Host header names"),
        (b"GET http://pypi.org/ HTTP/1.1\r\nHost: evil.example.com\r\n\r\n", b"403", b"the Host header names"),
        (b"GET http://pypi.org/ HTTP/1.1\r\nHost: pypi.org\r\nhost: evil.com\r\n\r\n", b"400", b"more than one"),
        (b"GET http://pypi.org/ HTTP/1.1\r\nHost : evil.com\r\n\r\n", b"400", b"malformed header"),
        (b"GET http://pypi.org/ HTTP/1.1\r\nX: y\r\n Host: evil.com\r\n\r\n", b"400", b"malformed header"),
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


async def test_on_macos_commands_reach_the_proxy_on_a_port_it_holds(tmp_path: Path) -> None:
    """Seatbelt has no network namespace and no forwarder: the proxy listens on a port of its own on 127.0.0.1, held
    for the session, and the profile lets a command reach that port alone (its environment names it). Built here as
    on macOS (the profile is text; only `sandbox-exec` needs macOS), and the port asked for real."""
    work = tmp_path / "work"
    work.mkdir()
    settings = SandboxConfig(network="proxy", allow_hosts=["pypi.org"])
    async with anyio.create_task_group() as tasks:
        sandbox = await CommandSandbox.open((work,), settings, probe.Support("seatbelt"), tasks)
        try:
            argv, env = await sandbox.launch(["true"])
            assert sandbox.proxy is not None and sandbox.proxy.tcp_port is not None
            port = sandbox.proxy.tcp_port
            assert env["HTTPS_PROXY"] == env["http_proxy"] == f"http://127.0.0.1:{port}"
            profile = argv[argv.index("-p") + 1]
            assert f'(allow network-outbound (remote ip "localhost:{port}"))' in profile
            assert "localhost:*" not in profile and "3128" not in profile
            async with await anyio.connect_tcp("127.0.0.1", port) as stream:
                await stream.send(b"CONNECT evil.example.com:443 HTTP/1.1\r\n\r\n")
                assert (await stream.receive()).startswith(b"HTTP/1.1 403")
        finally:
            await sandbox.aclose()
            tasks.cancel_scope.cancel()
