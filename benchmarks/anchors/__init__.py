"""Moved: the anchors live in tosa_vk/bench/anchors/ (the installed package cannot reach outside itself)."""
