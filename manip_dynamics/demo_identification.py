"""Entry point of the identification demo (``make demo-identification``):
``python -m manip_dynamics.demo_identification``.

The demo itself lives in :mod:`manip_dynamics.demos.identification` (docs/architecture.md).
"""
import sys

from manip_dynamics.demos.identification import main

if __name__ == "__main__":
    sys.exit(main())
