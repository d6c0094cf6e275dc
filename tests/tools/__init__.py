"""Maintenance scripts for the test data (not collected by pytest)."""
