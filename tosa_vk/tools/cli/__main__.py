"""`python -m tosa_vk.tools.cli`: the `tosa-vk` command."""

import sys

from tosa_vk.tools.cli import entry

if __name__ == "__main__":
    sys.exit(entry())
