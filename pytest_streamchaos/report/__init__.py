"""Reports: terminal table, JSON, baseline comparison."""
