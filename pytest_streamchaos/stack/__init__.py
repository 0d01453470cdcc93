"""What runs: the stack interface and its backends (``local`` processes; ``docker`` later)."""
