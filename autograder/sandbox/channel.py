"""The fork server's control connections: one message at a time (a JSON request or reply,
perhaps with descriptors), and an end the other side sees when a process goes.

``SOCK_SEQPACKET`` is exactly that, and what Linux uses. macOS has no ``AF_UNIX``
``SOCK_SEQPACKET`` (``socketpair`` fails with EPROTONOSUPPORT); there the pair is
``SOCK_STREAM`` and each message goes behind a 4-byte length, its descriptors riding on its
first bytes (a stream delivers them with the read that takes those bytes). Which framing a
socket needs is read from the socket itself, so both ends agree whichever process made it.
"""

from __future__ import annotations

import os
import socket
import struct

_LENGTH = struct.Struct(">I")


def pair() -> tuple[socket.socket, socket.socket]:
    """A connected pair: SOCK_SEQPACKET where the system has it, SOCK_STREAM otherwise."""
    try:
        return socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    except OSError:
        return socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)


def _framed(sock: socket.socket) -> bool:
    return sock.type != socket.SOCK_SEQPACKET


def send(sock: socket.socket, data: bytes, fds: list[int] | tuple[int, ...] = ()) -> None:
    """Send one message (and ``fds``)."""
    if not _framed(sock):
        if fds:
            socket.send_fds(sock, [data], list(fds))
        else:
            sock.send(data)
        return
    payload = _LENGTH.pack(len(data)) + data
    sent = socket.send_fds(sock, [payload], list(fds)) if fds else sock.send(payload)
    if sent < len(payload):
        sock.sendall(payload[sent:])


def recv(sock: socket.socket, max_size: int, max_fds: int = 0) -> tuple[bytes, list[int]]:
    """One message and the descriptors that came with it; ``b""`` once the other side is gone.
    ValueError for a message over ``max_size`` (its descriptors are closed)."""
    if not _framed(sock):
        if max_fds:
            data, fds, _flags, _addr = socket.recv_fds(sock, max_size, max_fds)
            return data, fds
        return sock.recv(max_size), []
    head, fds = b"", []
    try:
        while len(head) < _LENGTH.size:
            if max_fds:
                chunk, got, _flags, _addr = socket.recv_fds(sock, _LENGTH.size - len(head), max_fds)
                fds += got
            else:
                chunk = sock.recv(_LENGTH.size - len(head))
            if not chunk:
                raise EOFError
            head += chunk
        (size,) = _LENGTH.unpack(head)
        if size > max_size:
            raise ValueError(f"a control message of {size} bytes (at most {max_size})")
        body = bytearray()
        while len(body) < size:
            chunk = sock.recv(min(size - len(body), 1 << 20))
            if not chunk:
                raise EOFError
            body += chunk
    except EOFError:
        _close(fds)
        return b"", []
    except BaseException:
        _close(fds)
        raise
    return bytes(body), fds


def _close(fds: list[int]) -> None:
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass
