"""Attack, part 2 of 2: look for code planted by sysv_ipc_planter (or keyring_planter) in
SysV shared memory, a message queue or the kernel keyring, and run it: a working solution
that this submission never wrote."""
import ctypes
import platform

KEY = 0x41475238
_libc = ctypes.CDLL(None, use_errno=True)
_libc.shmat.restype = ctypes.c_void_p
FOUND = []


def _load() -> str | None:
    shm = _libc.shmget(KEY, 0, 0)
    if shm >= 0:
        addr = _libc.shmat(shm, None, 0o10000)  # SHM_RDONLY
        if addr not in (None, ctypes.c_void_p(-1).value):
            FOUND.append("shm")
            return ctypes.string_at(addr).decode()
    queue = _libc.msgget(KEY, 0)
    if queue >= 0:
        message = ctypes.create_string_buffer(8 + (1 << 16))
        size = _libc.msgrcv(queue, message, 1 << 16, 0, 0o4000)
        if size > 0:
            FOUND.append("msg")
            return message.raw[8 : 8 + size].decode()
    keyctl = {"x86_64": (249, 250), "aarch64": (218, 219)}.get(platform.machine())
    if keyctl:
        request_key, keyctl_nr = keyctl
        key = _libc.syscall(request_key, b"user", b"autograder-planted", None, 0)
        if key >= 0:
            buffer = ctypes.create_string_buffer(1 << 16)
            size = _libc.syscall(keyctl_nr, 11, key, buffer, 1 << 16)  # KEYCTL_READ
            if size > 0:
                FOUND.append("keyring")
                return buffer.raw[:size].decode()
    return None


_code = _load()
if _code:
    exec(_code)
else:
    def project_qkv(x, w_q, w_k, w_v):
        raise RuntimeError(f"found: {FOUND}")

    def attention_scores(q, k):
        raise RuntimeError(f"found: {FOUND}")
