"""Shared test configuration for the project's own tests."""
