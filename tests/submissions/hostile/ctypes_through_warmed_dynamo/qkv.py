"""A submission that imports torch's bottom-right causal mask makes the fork server load
torch._dynamo for it (sandbox/libraries.py), and with it ``torch._inductor.cpp_builder``, which
holds ``ctypes.wintypes`` (and through it ctypes itself) under a name the fork server's first
list of holders did not have. Reached from a skill no rule scan reads, ctypes would read and
write the worker's memory (its reply key, its recorders). The fork server replaces every name
that holds a ctypes object once it made such a module: the import fails with its refusal."""

import sys

from torch.nn.attention.bias import causal_lower_right  # noqa: F401  (the fork server makes it)

builder = sys.modules["torch._inductor.cpp_builder"]
ctypes = builder.wintypes.ctypes  # the placeholder refuses here
# reached, ctypes' own calls that raise no audit event would follow (memmove over the reply key);
# sizeof stands for them here: it runs wherever ctypes is reached
POINTER_BYTES = ctypes.sizeof(ctypes.c_void_p)
