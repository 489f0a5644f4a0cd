"""`tosa-vk doctor` (tosa_vk/tools/cli/doctor.py) and tosa_vk on a machine without Vulkan (issue 48): no loader (the
`vulkan` package's import fails to open libvulkan), no driver (the loader finds no manifest), no GLSL compiler, a
cache folder others can write, a missing extra; each named with the command that fixes it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tosa_vk import paths
from tosa_vk.tools.cli import main
from tosa_vk.tools.cli.doctor import EXTRAS, SCHEMA, WARNING
from tosa_vk.vulkan import builtin, glsl_compiler, loader

ROOT = Path(__file__).resolve().parent.parent
# what every device-side failure names as the fix on Linux
INSTALL = "apt-get install libvulkan1 mesa-vulkan-drivers"
DEVICE_VARIABLES = ("TOSA_VK_TARGET", "TOSA_VK_DISABLE", "TOSA_VK_VISIBLE_DEVICES", "TOSA_VK_DEVICE")


@pytest.fixture
def clean_env(tmp_path, monkeypatch):
    """A cache of the test's own, and none of the variables that change which devices and kernels doctor sees."""
    monkeypatch.setenv("TOSA_VK_CACHE", str(tmp_path / "cache"))
    for name in DEVICE_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    return tmp_path / "cache"


def doctor(capsys, *args: str) -> tuple[int, dict]:
    code = main(["doctor", "--json", *args])
    return code, json.loads(capsys.readouterr().out)


def problem(report: dict, what: str) -> dict:
    found = [p for p in report["problems"] if p["what"] == what]
    assert len(found) == 1, report["problems"]
    return found[0]


def test_doctor_reports_this_machine(clean_env, capsys):
    code, r = doctor(capsys)
    assert code == 0 and r["usable"] and r["schema"] == SCHEMA
    assert not [p for p in r["problems"] if p["severity"] != WARNING]
    assert r["vulkan_loader"]["found"] and r["vulkan_loader"]["version"].startswith("1.")
    lavapipe = [d for d in r["devices"] if d["device_class"] == "lavapipe"]
    assert lavapipe and lavapipe[0]["kind"] == "cpu" and lavapipe[0]["compiles_for"] == "lavapipe"
    # the lavapipe class takes the register kernels for every operator, with no optional kernel feature
    assert set(lavapipe[0]["families"].values()) == {"register"} and lavapipe[0]["kernel_features"] == []
    assert sum(d["default"] for d in r["devices"]) == 1
    want = [c for c in (glsl_compiler.glslc(), glsl_compiler.glslang()) if c is not None]
    assert [(c["kind"], c["path"]) for c in r["compilers"]["glsl"]] == [(c.kind, c.exe) for c in want]
    assert r["compilers"]["builtin_kernels"]["path"] == str(builtin.LIBRARY)
    caches = r["caches"]
    assert caches["root"]["path"] == str(clean_env) and caches["programs"]["path"] == str(clean_env / "programs")
    assert caches["spirv"]["path"] == str(clean_env / "spirv") and caches["budget"] > 0
    assert not clean_env.exists()  # doctor looks, it creates nothing
    assert {e["name"] for e in r["extras"]} == {name for name, *_ in EXTRAS}
    assert r["elapsed_ms"] > 0


def test_doctor_text(clean_env, capsys):
    assert main(["doctor"]) == 0
    out = capsys.readouterr().out
    assert "[ok] Vulkan loader 1." in out and "class lavapipe" in out and "kernels: MATMUL register" in out
    assert "GLSL compilers:" in out and f"$TOSA_VK_CACHE: {clean_env}" in out
    assert "Vulkan is usable; doctor took" in out


def test_json_schema(clean_env, capsys):
    """The keys a script may rely on (schema 1: keys are only ever added)."""
    _, r = doctor(capsys)
    assert set(r) == {"schema", "python", "tosa_vk", "vulkan_loader", "devices", "compilers", "caches", "extras",
                      "problems", "usable", "elapsed_ms"}  # fmt: skip
    assert set(r["vulkan_loader"]) == {"found", "library", "version", "package", "error"}
    device_keys = {"index", "name", "kind", "uuid", "driver", "api_version", "device_class", "compiles_for", "default",
                   "subgroup_size", "kernel_features", "families"}  # fmt: skip
    assert set(r["devices"][0]) == device_keys
    assert set(r["compilers"]) == {"glsl", "builtin_kernels"}
    assert all(set(c) == {"kind", "path", "version"} for c in r["compilers"]["glsl"])
    assert set(r["caches"]) == {"variable", "budget", "root", "programs", "spirv"}
    assert set(r["caches"]["spirv"]) == {"path", "exists", "entries", "bytes", "mode", "trusted", "why_not"}
    assert all(set(e) == {"name", "for", "installed", "missing", "version", "install"} for e in r["extras"])


def test_a_cache_others_can_write_is_named_with_its_fix(clean_env, capsys):
    clean_env.mkdir(mode=0o700)
    clean_env.chmod(0o702)
    code, r = doctor(capsys)
    assert code == 0  # a warning: the caches are skipped, Vulkan runs
    p = problem(r, "the root cache is not used")
    assert p["severity"] == WARNING and "other users may write" in p["detail"]
    assert p["fix"] == f"chmod go-w {clean_env}" and r["caches"]["root"]["mode"] == "0702"
    assert oct(clean_env.stat().st_mode & 0o777) == "0o702"  # not changed behind the user's back


def test_no_compiler_is_named_with_its_fix(clean_env, tmp_path, monkeypatch, capsys):
    """PATH without glslc (nor glslangValidator), and the package's glslang hidden (no cmeel.prefix on sys.path)."""
    (tmp_path / "bin").mkdir()
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    monkeypatch.setattr(paths, "environment_bin", lambda: tmp_path / "bin")  # nor beside this Python
    monkeypatch.setattr(sys, "path", [p for p in sys.path if not (Path(p or ".") / "cmeel.prefix").is_dir()])
    assert glsl_compiler.glslc() is None and glsl_compiler.glslang() is None
    code, r = doctor(capsys)
    p = problem(r, "no GLSL compiler")
    assert r["compilers"]["glsl"] == [] and p["fix"] == glsl_compiler.GET_ONE
    shipped = builtin.library().info().get("modules", 0)
    assert p["severity"] == (WARNING if shipped else "error") and code == (0 if shipped else 1)


def test_a_missing_extra_is_named_with_its_install_command(clean_env, monkeypatch, capsys):
    class Blocker:
        """A meta-path finder that finds `ray` nowhere, as on a machine without it."""

        def find_spec(self, name, path=None, target=None):
            if name == "ray" or name.startswith("ray."):
                raise ModuleNotFoundError(f"No module named {name!r}")
            return None

    monkeypatch.setattr(sys, "meta_path", [Blocker(), *sys.meta_path])
    for name in [m for m in sys.modules if m == "ray" or m.startswith("ray.")]:
        monkeypatch.delitem(sys.modules, name)
    _, r = doctor(capsys)
    ray = next(e for e in r["extras"] if e["name"] == "ray")
    assert not ray["installed"] and ray["missing"] == ["ray"] and ray["install"] == "pip install 'tosa_vk[ray]'"
    main(["doctor"])
    assert "not installed: ray (tosa_vk.tools.ray.Predictor (Ray Data)): pip install 'tosa_vk[ray]'" in (
        capsys.readouterr().out
    )


def test_doctor_imports_no_heavy_package(tmp_path):
    """Extras are found by find_spec / metadata: none is imported (torch, ray, .. take seconds)."""
    code = (
        "import sys\nfrom tosa_vk.tools.cli.doctor import collect\ncollect()\n"
        "print(sorted(m for m in ('torch', 'executorch', 'ray', 'iree', 'model_explorer', 'matplotlib', 'tflite', "
        "'mkdocs', 'emulation_layer', 'model_converter', 'scenario_runner_py') if m in sys.modules))"
    )
    env = {**os.environ, "TOSA_VK_CACHE": str(tmp_path / "cache"), "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "[]", done.stderr[-2000:]


# ---- without Vulkan -------------------------------------------------------------------------------------------------

NO_LOADER_SCRIPT = """
import warnings
import numpy as np
import tosa_vk
from tosa_vk.vulkan.shaders import ShaderCache  # the SPIR-V cache and the compilers need no loader


def error(call):
    try:
        call()
    except tosa_vk.VulkanError as err:
        return str(err)
    raise AssertionError(f"{call} raised no VulkanError")


listed = error(tosa_vk.devices)  # not [], which would say nothing of why
b = tosa_vk.Builder(); x = b.input("x", (2, 3), "fp32"); b.output(b.add(x, x, name="y")); g = b.build()
with tosa_vk.load(g, backend="reference") as m:
    assert m.run(x=np.ones((2, 3), np.float32))["y"].tolist() == [[2.0] * 3] * 2
loaded = error(lambda: tosa_vk.load(g, backend="vulkan"))
assert listed == loaded, (listed, loaded)
print(loaded)
"""


def _can_hide_the_loader() -> bool:
    if os.geteuid() != 0 or shutil.which("unshare") is None or shutil.which("mount") is None:
        return False
    return subprocess.run(["unshare", "--mount", "true"], capture_output=True).returncode == 0


@pytest.fixture(params=["import fails", "loader hidden"])
def without_loader(request, tmp_path):
    """(command prefix, environment) of a process with no Vulkan loader: a `vulkan` package whose import fails as
    the real one's does where libvulkan is missing, or (as root) the real libvulkan hidden in a mount namespace."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TOSA_VK_CACHE": str(tmp_path / "cache")}
    if request.param == "import fails":
        fake = tmp_path / "site" / "vulkan"
        fake.mkdir(parents=True)
        (fake / "__init__.py").write_text("raise OSError('Cannot find Vulkan SDK version. Please ensure that it is "
                                          "installed')\n")  # fmt: skip
        env["PYTHONPATH"] = f"{tmp_path / 'site'}{os.pathsep}{ROOT}"
        return [], env
    if not _can_hide_the_loader():
        pytest.skip("hiding libvulkan needs root and unshare")
    library = loader.loader_facts()["library"]
    if library is None:
        pytest.skip("libvulkan's file is not known here (/proc/self/maps)")
    mount = 'mount --bind /dev/null "$0" && exec "$@"'
    return ["unshare", "--mount", "sh", "-c", mount, library], env


def _python(prefix: list[str], env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*prefix, sys.executable, *args], capture_output=True, text=True, env=env, timeout=300,
                          cwd=ROOT)  # fmt: skip


def test_without_a_loader_the_package_and_the_reference_backend_work(without_loader):
    done = _python(*without_loader, "-c", NO_LOADER_SCRIPT)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("no Vulkan loader: libvulkan.so.1 cannot be opened") and INSTALL in done.stdout


def test_without_a_loader_the_cli_says_what_is_missing(without_loader, tmp_path):
    model, x = tmp_path / "add.tosa", tmp_path / "x.npy"
    setup = (
        "import sys, numpy as np, tosa_vk\nb = tosa_vk.Builder(); x = b.input('x', (2, 3), 'fp32')\n"
        "b.output(b.add(x, x, name='y')); tosa_vk.save_graph(b.build(), sys.argv[1])\n"
        "np.save(sys.argv[2], np.ones((2, 3), np.float32))"
    )
    assert _python(*without_loader, "-c", setup, str(model), str(x)).returncode == 0

    def cli(*args: str) -> subprocess.CompletedProcess:
        return _python(*without_loader, "-m", "tosa_vk.tools.cli", *args)

    ran = cli("run", str(model), "-i", f"x={x}", "--backend", "reference", "-o", str(tmp_path / "out"))
    assert ran.returncode == 0 and (tmp_path / "out" / "y.npy").is_file(), ran.stderr
    for args in (["run", str(model), "-i", f"x={x}", "--backend", "vulkan"], ["devices"]):
        done = cli(*args)
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
        assert done.stderr.startswith("tosa-vk: error: no Vulkan loader") and INSTALL in done.stderr
    assert cli("cache", "info").returncode == 0
    done = cli("doctor", "--json")
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    r = json.loads(done.stdout)
    assert not r["usable"] and r["devices"] == [] and not r["vulkan_loader"]["found"]
    p = problem(r, "no Vulkan loader")
    assert INSTALL in p["fix"] and p["severity"] == "error"
    text = cli("doctor")
    assert (
        text.returncode == 1
        and "[xx] Vulkan loader: not found" in text.stdout
        and f"fix: {loader.install()}" in (text.stdout)
    )


def test_without_a_driver_doctor_and_the_vulkan_backend_say_so(tmp_path):
    """A loader with no driver manifest to read: vkCreateInstance fails (VK_ERROR_INCOMPATIBLE_DRIVER)."""
    nowhere = str(tmp_path / "no_icd.json")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TOSA_VK_CACHE": str(tmp_path / "cache"),
           "VK_DRIVER_FILES": nowhere, "VK_ICD_FILENAMES": nowhere}  # fmt: skip
    done = _python([], env, "-m", "tosa_vk.tools.cli", "doctor", "--json")
    assert done.returncode == 1, done.stderr
    r = json.loads(done.stdout)
    assert r["vulkan_loader"]["found"] and r["devices"] == [] and not r["usable"]
    p = problem(r, "no Vulkan driver")
    assert INSTALL in p["fix"] and f"VK_DRIVER_FILES={nowhere} (no such file: {nowhere})" in p["detail"]
    done = _python([], env, "-c", NO_LOADER_SCRIPT)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("cannot create a Vulkan instance") and "no Vulkan driver" in done.stdout
    assert INSTALL in done.stdout


def test_only_the_loader_module_imports_vulkan():
    """Every `vulkan` import goes through tosa_vk/vulkan/loader.py, so a missing loader is one VulkanError with its
    fix wherever the device side is first used (module-level imports only: a function may import it lazily)."""
    direct = [
        str(path.relative_to(ROOT))
        for path in (ROOT / "tosa_vk").rglob("*.py")
        if path.name != "loader.py"
        for line in path.read_text().splitlines()
        if line.startswith(("import vulkan", "from vulkan "))
    ]
    assert direct == []
