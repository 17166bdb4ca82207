"""torch's frame-evaluation hook, loaded with torch in every worker: its callback is handed
each frame evaluated next — the worker's own, with their globals and locals (the key that
signs replies, the recorders). From a skill no rule scan reads, under its own name and under
torch._dynamo's alias for it (blind red-team tester R-CA read the reply key through
``_maybe_set_eval_frame``). A worker seals every name that holds it: the import fails with its
refusal."""

import torch
import torch.nn.attention.bias  # noqa: F401  (the fork server makes torch._dynamo for it)

FRAMES = []


def _keep(frame, *rest):
    FRAMES.append(frame)


REFUSED = []
for hook in (torch._dynamo.eval_frame._maybe_set_eval_frame, torch._C._dynamo.eval_frame.set_eval_frame):
    try:
        hook(_keep)
    except RuntimeError as exc:
        REFUSED.append(str(exc))
if len(REFUSED) == 2:
    raise RuntimeError(REFUSED[0])
