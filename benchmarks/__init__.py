"""Timing runs and studies outside the package (not in the wheel): commands that print figures."""
