"""Studies and timing runs outside the ragnet package (not part of the wheel)."""
