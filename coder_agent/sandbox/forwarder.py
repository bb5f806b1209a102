"""The proxy's forwarder: inside the network namespace of a session's sandboxed commands, the one way out.

It listens on the namespace's own 127.0.0.1 (`linux.PROXY_PORT`) and carries every connection, byte for byte, to the
agent's proxy over the proxy's UNIX socket (a UNIX socket is a file: it crosses network namespaces). The proxy
decides what may pass (`sandbox.proxy`); this end decides nothing. Standard library only; it runs in a process
forked by the session's network holder (`linux.hold_network`), and ends with it; or, for a command in a network
namespace of its own, forked by `linux.enter` before the walls go up, ending with the command.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time

BUFFER = 65536
MAX_RELAYS = 64
"""Connections relayed at once (two threads each)."""
PAUSE = 0.05


def listen(port: int) -> socket.socket:
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(64)
    return listener


def serve(listener: socket.socket, proxy_socket: str) -> None:
    """Accept forever (the process ends with its parent), one relay per connection, at most `MAX_RELAYS` at once
    (the others wait in the listen queue). Nothing a client does ends it: when descriptors or threads run out
    (a command holding connections open), the connection is dropped and the forwarder goes on."""
    slots = threading.BoundedSemaphore(MAX_RELAYS)
    while True:
        slots.acquire()
        try:
            client, _ = listener.accept()
        except OSError:  # EMFILE, ENFILE, ENOBUFS, ECONNABORTED: a moment, then on
            slots.release()
            time.sleep(PAUSE)
            continue
        try:
            threading.Thread(target=_relay, args=(client, proxy_socket, slots), daemon=True).start()
        except RuntimeError:  # no thread to be had
            client.close()
            slots.release()
            time.sleep(PAUSE)


def _relay(client: socket.socket, proxy_socket: str, slots: threading.BoundedSemaphore) -> None:
    try:
        with client, socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as upstream:
            upstream.connect(proxy_socket)
            back = threading.Thread(target=_pump, args=(upstream, client), daemon=True)
            back.start()
            _pump(client, upstream)
            back.join()
    except (OSError, RuntimeError):
        pass
    finally:
        slots.release()


def _pump(source: socket.socket, sink: socket.socket) -> None:
    with contextlib.suppress(OSError):
        while data := source.recv(BUFFER):
            sink.sendall(data)
    with contextlib.suppress(OSError):
        sink.shutdown(socket.SHUT_WR)
