import sys

booted = None
if sys.argv[1:2] == ["grade"]:
    # the trusted pytest process first: its ~1.2 s of imports overlap everything this
    # process does before grading (runner/boot.py); a failure here only costs that head start
    try:
        from .runner.engine import boot

        booted = boot()
    except Exception:  # noqa: BLE001
        booted = None

from .cli import main

sys.exit(main(booted=booted))
