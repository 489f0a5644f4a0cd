"""tosa_vk's version, on the ground floor: the package face re-exports it and the program cache's build digest
reads it, so no module below the face imports the face (pyproject.toml states the same number)."""

__version__ = "0.1.0"
