"""The old import path of :mod:`pytest_streamchaos.stack.tcpproxy` (a proxy is a stack node now)."""

import sys

from pytest_streamchaos.stack import tcpproxy as _moved

sys.modules[__name__] = _moved
