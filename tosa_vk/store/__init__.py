"""Bytes at rest: pickle-free data files (a Program's bytes), the program cache, how cache files are read, and the
one atomic writer every file tosa_vk writes goes through (files.py)."""
