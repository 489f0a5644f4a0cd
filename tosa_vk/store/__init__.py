"""Bytes at rest: pickle-free data files (a Program's bytes), the program cache, how cache files are read and
written."""
