"""Verdicts: guarantee validation, recovery metrics and SLA checks. Pure: data in, numbers out."""
