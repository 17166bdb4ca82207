import sys

booted = None
if sys.argv[1:2] == ["grade"]:
    # the trusted pytest process first: its ~1.2 s of imports overlap everything this
    # process does before grading (runner/boot.py); a failure here only costs that head start
    try:
        from .runner.engine import boot, boot_root

        root = boot_root(sys.argv[2:])
        booted = boot(root) if root is not None else None
    except Exception:  # noqa: BLE001
        booted = None

from .cli import main

sys.exit(main(booted=booted))
