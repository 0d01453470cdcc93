"""Helpers of the enrich_orders job: the region table and the customer code."""

import csv


def load_regions(path):
    """(customer code, region) rows of the region table, a CSV with a header."""
    with open(path, newline="") as f:
        return [(row["customer"], row["region"]) for row in csv.DictReader(f)]


def customer_code(customer):
    """The customer's code as the region table writes it (``k7`` -> ``C007``)."""
    return None if customer is None else f"C{int(customer.lstrip('k')):03d}"
