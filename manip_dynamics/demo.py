"""Entry point of the closed-loop demo (``make demo``): ``python -m manip_dynamics.demo``.

The demo itself lives in :mod:`manip_dynamics.demos.closed_loop` (docs/architecture.md).
"""
import sys

from manip_dynamics.demos.closed_loop import main

if __name__ == "__main__":
    sys.exit(main())
