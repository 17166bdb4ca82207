"""Attack, part 1 of 2: plant a working solution in SysV shared memory, a message queue, a
POSIX message queue and a semaphore (a signal to the loader), and leave them behind for a
later test, run or student (sysv_ipc_loader runs what it finds)."""
import ctypes

KEY = 0x41475238  # "AGR8"
PAYLOAD = b"""
def project_qkv(x, w_q, w_k, w_v):
    return x @ w_q, x @ w_k, x @ w_v

def attention_scores(q, k):
    return q @ k.transpose(-2, -1)

def scale_scores(scores, d_k):
    return scores / d_k ** 0.5

def weighted_values(weights, v):
    return weights @ v
"""
_libc = ctypes.CDLL(None, use_errno=True)
_libc.shmat.restype = ctypes.c_void_p
IPC_CREAT = 0o1000


def _plant() -> list[str]:
    planted = []
    shm = _libc.shmget(KEY, 1 << 16, IPC_CREAT | 0o666)
    if shm >= 0:
        addr = _libc.shmat(shm, None, 0)
        if addr not in (None, ctypes.c_void_p(-1).value):
            ctypes.memmove(addr, PAYLOAD + b"\0", len(PAYLOAD) + 1)
            planted.append("shm")
    queue = _libc.msgget(KEY, IPC_CREAT | 0o666)
    if queue >= 0:
        message = ctypes.create_string_buffer(8 + len(PAYLOAD))
        ctypes.memmove(ctypes.addressof(message), (1).to_bytes(8, "little") + PAYLOAD, 8 + len(PAYLOAD))
        if _libc.msgsnd(queue, message, len(PAYLOAD), 0o4000) == 0:  # IPC_NOWAIT
            planted.append("msg")
    if _libc.semget(KEY, 1, IPC_CREAT | 0o666) >= 0:
        planted.append("sem")
    if _libc.mq_open(b"/autograder-planted", 0o100 | 2, 0o666, None) >= 0:  # O_CREAT | O_RDWR
        planted.append("mqueue")
    return planted


PLANTED = _plant()


def project_qkv(x, w_q, w_k, w_v):
    raise RuntimeError(f"planted: {PLANTED + _plant()}")


def attention_scores(q, k):
    raise RuntimeError(f"planted: {PLANTED}")
