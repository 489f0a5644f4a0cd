"""tosa_vk's version, on the ground floor, and its one source: pyproject.toml reads it for the wheel's metadata
(`dynamic = ["version"]`), the package face re-exports it (tosa_vk.__version__, `tosa-vk --version`) and the program
cache's build digest reads it, so no module below the face imports the face."""

__version__ = "0.1.0"
