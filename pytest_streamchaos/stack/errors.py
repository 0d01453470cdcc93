"""The stack's errors (re-exported by :mod:`.base`, the stack's interface): in a module of their own so
that the stack's lowest helpers raise them without importing the interface."""


class StackError(RuntimeError):
    """The stack cannot be brought up or healed. The message names the problem and the fix."""


class NetFaultError(RuntimeError):
    """A network fault could not be injected or healed. The message names the command and the fix.
    (Defined with the stack because the stack's links raise it too; ``netem.iptables`` re-exports it.)"""


class LaunchError(RuntimeError):
    """A job cannot be launched as asked (missing script, unsupported mode, no Java). The message
    names the problem and the fix."""
