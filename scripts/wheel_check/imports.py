"""Every module of the installed tosa_vk and vgf imports (scripts/wheel_check.sh), from the venv that runs this,
never from a source tree. A module may fail only for an optional extra listed here, with the reason."""

import importlib
import pkgutil
import sys
from pathlib import Path

# module -> (the top-level package it needs, why): the extras of pyproject.toml's optional-dependencies
OPTIONAL: dict[str, tuple[str, str]] = {}

venv = Path(sys.prefix).resolve()
failed, skipped, n = [], [], 0
for top in ("tosa_vk", "vgf"):
    package = importlib.import_module(top)
    where = Path(package.__file__).resolve()
    assert where.is_relative_to(venv), f"{top} imported from {where}, not from the venv {venv}"
    for info in pkgutil.walk_packages(package.__path__, top + ".", onerror=lambda name: failed.append((name, "walk"))):
        n += 1
        try:
            importlib.import_module(info.name)
        except ImportError as err:
            needs, why = OPTIONAL.get(info.name, (None, ""))
            if needs is not None and err.name is not None and err.name.split(".")[0] == needs:
                skipped.append(f"{info.name} ({why})")
            else:
                failed.append((info.name, repr(err)))
for name, err in failed:
    print(f"FAIL: {name}: {err}", file=sys.stderr)
print(f"{n} modules imported from {venv}; skipped: {', '.join(skipped) or 'none'}")
sys.exit(1 if failed else 0)
