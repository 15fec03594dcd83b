"""MiniWoB++ as a second environment (placeholder docstring, replaced below)."""
