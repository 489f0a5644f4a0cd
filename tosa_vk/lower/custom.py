"""custom lowerings (being written)."""
