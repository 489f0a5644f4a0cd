"""Start-up (issue 49): `import tosa_vk` pulls in none of the heavy modules (numpy, the Vulkan bindings, the
flatbuffer accessors, the operator catalogue, the backends, the tools, torch): its public names are imported when
first used. A program-cache hit (a backend loaded) still imports no compile stage, catalogue or graph parser.
Module lists, never timings."""

from __future__ import annotations

import json
import subprocess
import sys

import tosa_vk

HEAVY = (
    "numpy",
    "vulkan",
    "torch",
    "flatbuffers",
    "vgf.container",
    "tosa_vk.ir.flatbuffer",
    "tosa_vk.ir.ops",
    "tosa_vk.ir.validate",
    "tosa_vk.backends",
    "tosa_vk.session",
    "tosa_vk.stages",
    "tosa_vk.tools",
    "tosa_vk.vulkan",
    "tosa_vk.reference",
)
# what a cached model's load may not import: what only a compile or a parse needs
COMPILE_ONLY = (
    "tosa_vk.stages.compiler",
    "tosa_vk.ir.flatbuffer",
    "tosa_vk.ir.ops",
    "tosa_vk.ir.validate",
    "vgf.container",
)


def modules_after(code: str, env: dict[str, str] | None = None) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.splitlines()[-1])


def test_import_tosa_vk_imports_nothing_heavy():
    loaded = modules_after("import tosa_vk")
    assert not [m for m in loaded if m in HEAVY or m.startswith(tuple(f"{h}." for h in HEAVY))]


def test_public_names_still_resolve_and_list():
    for name in tosa_vk.__all__:
        assert getattr(tosa_vk, name) is not None, name
    assert set(tosa_vk.__all__) <= set(dir(tosa_vk))
    assert tosa_vk.load.__module__ == "tosa_vk.session" and tosa_vk.compile.__module__ == "tosa_vk.stages.compiler"
    assert tosa_vk.MOVED["tosa_vk.cli"] == "tosa_vk.tools.cli"


def test_a_moved_module_still_imports_as_its_new_one():
    loaded = modules_after("import tosa_vk.cli, tosa_vk.tools.cli\nassert tosa_vk.cli is tosa_vk.tools.cli")
    assert "tosa_vk.tools.cli" in loaded


def test_an_unknown_name_is_an_attribute_error():
    import pytest

    with pytest.raises(AttributeError, match="no_such_name"):
        tosa_vk.no_such_name  # noqa: B018


def test_the_vulkan_backend_imports_no_compile_stage():
    loaded = modules_after("import tosa_vk.backends.vulkan")
    assert not [m for m in loaded if m in COMPILE_ONLY]


def test_validate_is_the_function_after_its_module_is_imported():
    code = (
        "import tosa_vk.ir.validate, tosa_vk, tosa_vk.ir\n"
        "assert callable(tosa_vk.ir.validate) and callable(tosa_vk.validate)\n"
        "from tosa_vk.ir import validate\nassert callable(validate)"
    )
    modules_after(code)


# what `tosa-vk run` of a .tosa may not import: the other commands' modules and what only they need
NOT_FOR_RUN = (
    "tosa_vk.backends.pte",
    "tosa_vk.formats.pte",
    "tosa_vk.tools.bench",
    "tosa_vk.tools.cli.convert",
    "tosa_vk.tools.cli.develop",
    "tosa_vk.tools.cli.diagnose",
    "tosa_vk.tools.cli.doctor",
    "tosa_vk.tools.cli.extract",
    "tosa_vk.tools.cli.info",
    "importlib.metadata",
)


def test_the_run_command_imports_only_its_own_module(tmp_path):
    import numpy as np

    b = tosa_vk.Builder()
    x = b.input("x", (2,), "fp32")
    b.output(b.op("ADD", x, b.const(np.ones(2, np.float32)), name="y"))
    tosa_vk.save_graph(b.build(), tmp_path / "m.tosa")
    np.save(tmp_path / "x.npy", np.array([1, 2], np.float32))
    desc = {"tosa_file": "m.tosa", "ifm_name": ["x"], "ifm_file": ["x.npy"], "ofm_name": ["y"], "ofm_file": ["y.npy"]}
    (tmp_path / "desc.json").write_text(json.dumps(desc))
    argv = ["run", "--backend", "reference", "--test-desc", str(tmp_path / "desc.json")]
    loaded = modules_after(f"from tosa_vk.tools.cli import main\nassert main({argv!r}) == 0")
    assert (tmp_path / "y.npy").is_file()
    assert not [m for m in loaded if m in NOT_FOR_RUN or m.startswith(tuple(f"{h}." for h in NOT_FOR_RUN))]


def test_the_parser_still_knows_every_command_and_its_options():
    from tosa_vk.tools.cli import COMMANDS, build_parser

    choices = next(a for a in build_parser()._actions if a.dest == "command").choices
    assert list(choices) == [name for name, _, _ in COMMANDS]
    for name in choices:  # every command's own options, whichever command line built the parser
        want = sorted(a.dest for a in choices[name]._actions)
        got = next(a for a in build_parser([name])._actions if a.dest == "command").choices[name]
        assert sorted(a.dest for a in got._actions) == want, name


# what a program-cache hit's load + first run may not import, in Python and by `tosa-vk run --test-desc`: besides
# the compile stages and the graph parser, the reference interpreter, the custom-op registry (none registered), the
# fuse stage and the host rules (none given)
NOT_FOR_A_HIT = (
    *COMPILE_ONLY,
    "flatbuffers",
    "tosa_vk.reference.executor",
    "tosa_vk.reference.registry",
    "tosa_vk.custom",
    "tosa_vk.stages.fuse",
    "tosa_vk.stages.records",
    "tosa_vk.stages.host_rules",
)


def test_a_program_cache_hit_imports_and_parses_only_what_it_runs(device, tmp_path):
    import os

    import numpy as np

    b = tosa_vk.Builder()
    x = b.input("x", (4,), "fp32")
    b.output(b.op("ADD", x, b.const(np.ones(4, np.float32)), name="y"))
    tosa_vk.save_graph(b.build(), tmp_path / "m.tosa")
    np.save(tmp_path / "x.npy", np.arange(4, dtype=np.float32))
    desc = {"tosa_file": "m.tosa", "ifm_name": ["x"], "ifm_file": ["x.npy"], "ofm_name": ["y"], "ofm_file": ["y.npy"]}
    (tmp_path / "desc.json").write_text(json.dumps(desc))
    env = {**os.environ, "TOSA_VK_CACHE": str(tmp_path / "cache")}
    env.pop("TOSA_VK_CUSTOM_OPS", None)
    in_python = (
        f"import numpy as np, tosa_vk\nwith tosa_vk.load({str(tmp_path / 'm.tosa')!r}, backend='vulkan') as m:\n"
        f"    assert m.cached == CACHED\n    y = m.run({{'x': np.arange(4, dtype=np.float32)}})['y']\n"
        "    assert y.tolist() == [1, 2, 3, 4], y"
    )
    modules_after(in_python.replace("CACHED", "False"), env)  # stores the program
    argv = ["run", "--backend", "vulkan", "--test-desc", str(tmp_path / "desc.json"), "-o", str(tmp_path / "out")]
    for code in (
        in_python.replace("CACHED", "True"),
        f"from tosa_vk.tools.cli import main\nassert main({argv!r}) == 0",
    ):
        loaded = modules_after(code, env)
        assert "tosa_vk.backends.vulkan" in loaded
        assert not [m for m in loaded if m in NOT_FOR_A_HIT or m.startswith(tuple(f"{h}." for h in NOT_FOR_A_HIT))]
    assert np.load(tmp_path / "out" / "y.npy").tolist() == [1, 2, 3, 4]
