"""`python -m tosa_vk`: the `tosa-vk` command (with its Ctrl-C watcher, as the installed script)."""

import sys

from tosa_vk.tools.cli import entry

if __name__ == "__main__":
    sys.exit(entry())
