"""The harness's errors about what runs (re-exported by :mod:`pytest_streamchaos.stack.base`, the stack's
interface): at the bottom of the package, so that the machine's set-up (:mod:`pytest_streamchaos.machine`) and
the stack's lowest helpers raise them without importing the interface; imports nothing of the package."""


class StackError(RuntimeError):
    """The stack cannot be brought up or healed. The message names the problem and the fix."""


class NetFaultError(RuntimeError):
    """A network fault could not be injected or healed. The message names the command and the fix.
    (Here because the stack's links raise it too.)"""


class LaunchError(RuntimeError):
    """A job cannot be launched as asked (missing script, unsupported mode, no Java). The message
    names the problem and the fix."""
