"""``python -m pytest_streamchaos.stack up|down yarn|kafka ...``: a part of the stack outside pytest
(:mod:`pytest_streamchaos.stack.cli`)."""

import sys

from pytest_streamchaos.stack.cli import main

sys.exit(main())
