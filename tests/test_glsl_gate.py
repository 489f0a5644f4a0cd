"""Model GLSL never reads a host file (issue 34): every spelling the GLSL preprocessor reads as #include is refused
by the gate (tosa_vk/abi/glsl_preprocessor.py) on every path a model's GLSL takes — payloads, VGF COMPUTE modules,
Programs read from bytes (cache entries) — and glslc itself, given a model's source, runs without include paths
and has its dependency list checked. No message quotes the file."""

from __future__ import annotations

import os
from dataclasses import replace

import numpy as np
import pytest
from test_custom_ops import SCALE_ADD, payload, single_custom_graph

import tosa_vk
from tosa_vk import TosaError
from tosa_vk.abi.glsl_preprocessor import code_text, refusal
from tosa_vk.program import Buffer, Kernel, Program
from tosa_vk.vulkan import shaders as shader_tools

SECRET = "host_secret_7f3a"  # an identifier: an include of it shows in glslc's "undeclared identifier" message
SECRET_VALUE = 31337.0  # a number: an include of it shows in the outputs


def include_line(path, spelling: str) -> str:
    """`#include "<path>"` as the preprocessor reads it, written the way `spelling` names."""
    name = f'"{path}"'
    return {
        "plain": f"#include {name}\n",
        "continuation": f"#\\\ninclude {name}\n",  # backslash-newline between # and include
        "comment": f"#/**/include {name}\n",
        "split_word": f"#inc\\\nlude {name}\n",
        "cr_only": f"\r#include {name}\r",
        "crlf_continuation": f"#inc\\\r\nlude {name}\r\n",
        "comment_continuation": f"// a comment \\\n#include {name}\n",  # a directive for GLSL before 4.20
        "spaces": f"  #  include {name}\n",
    }[spelling]


SPELLINGS = ["plain", "continuation", "comment", "split_word", "cr_only", "crlf_continuation", "comment_continuation"]


def secret_files(tmp_path):
    word, number = tmp_path / "word.txt", tmp_path / "number.txt"
    word.write_text(f"{SECRET}\n")
    number.write_text(f"{SECRET_VALUE}\n")
    return word, number


def adding_shader(include: str) -> str:
    """SCALE_ADD with the included file's text added to every output."""
    return SCALE_ADD.replace("y[idx] = x[idx] * 2.0 + 5.0;", "y[idx] = x[idx] * 2.0 + 5.0 +\n" + include + ";")


@pytest.mark.parametrize("spelling", SPELLINGS)
def test_payload_glsl_cannot_include_in_any_spelling(tmp_path, spelling):
    """Each of these put the host file's content into the outputs (or its first line into the message) before."""
    word, number = secret_files(tmp_path)
    for path in (word, number):
        graph = single_custom_graph(payload(shader_code=adding_shader(include_line(path, spelling))), shape=(64,))
        with pytest.raises(TosaError, match="may not #include") as err:
            tosa_vk.load(graph, backend="vulkan").run({"x": np.zeros(64, np.float32)})
        assert SECRET not in str(err.value) and str(path) not in str(err.value)


@pytest.mark.parametrize(
    "source",
    [
        '#line 7 "x.glsl"\n',
        "#extension GL_GOOGLE_include_directive : enable\n",
        "#define I include\n",
        "void main() {}\x00#include",
    ],
)
def test_gate_refuses_the_include_machinery(source):
    assert refusal(source) is not None


@pytest.mark.parametrize(
    "source",
    [SCALE_ADD, SCALE_ADD.replace("\n", "\r\n"), SCALE_ADD.replace("\n", "\r"), "// include guards are not needed\n"],
)
def test_gate_passes_ordinary_glsl(source):
    assert refusal(source) is None


def test_code_text_reads_as_the_preprocessor_does():
    assert code_text("a/* x */b") == "a b"
    assert code_text("a // x\nb") == "a  \nb"
    assert code_text("a\\\nb\r\nc\rd") == "ab\nc\nd"
    assert code_text("a // x\\\nb") == "a  "  # a continued comment (GLSL 4.20 on)
    assert code_text("a // x\\\nb", splice_comments=False) == "a  \nb"
    assert code_text("/\\\n* x *\\\n/b") == " b"


def test_vgf_compute_glsl_module_cannot_include(tmp_path):
    """A COMPUTE segment's GLSL module was compiled with no check at all: a plain #include worked."""
    from tosa_vk.formats.vgf_export import export_vgf
    from vgf import Module, read_vgf, save_vgf

    word, _ = secret_files(tmp_path)
    path = tmp_path / "m.vgf"
    export_vgf(tosa_vk.compile(single_custom_graph(payload(), shape=(64,)), views=False), path)
    vgf = read_vgf(path)
    i = next(i for i, m in enumerate(vgf.modules) if m.type == "COMPUTE")
    vgf.modules[i] = Module(vgf.modules[i].name, code=adding_shader(include_line(word, "plain")), language="GLSL")
    save_vgf(vgf, path)
    with pytest.raises(TosaError, match="may not #include") as err:
        tosa_vk.load(path, backend="vulkan").run({"x": np.zeros(64, np.float32)})
    assert SECRET not in str(err.value)


def one_kernel(**changes) -> Program:
    k = Kernel("CUSTOM #0 'y'", "custom:test", (), ("x",), b"", (1, 1, 1), writes=("x",), source=SCALE_ADD)
    return Program([replace(k, **changes)], {"x": Buffer("x", 0, 256, (64,), np.dtype(np.float32))}, 256, [], ["x"])


@pytest.mark.parametrize(
    "changes",
    [
        {"source": adding_shader('#include "../../../../../../etc/hostname"\n')},  # a cached Program's GLSL
        {"source": SCALE_ADD, "defines": (("X", '1\n#include "../../../etc/hostname"'),)},  # a define's newline
        {"source": "", "shader": "../../../../../etc/hostname"},  # a built-in shader name outside shaders/
        {"source": "", "shader": "elementwise_binary/binary", "defines": (("A\nB", "1"),)},
        {"source": "", "shader": "elementwise_binary/binary", "specs": (("N\n#include", 1),)},
    ],
)
def test_programs_read_from_bytes_cannot_reach_files(changes):
    from tosa_vk.vulkan.runtime import Runtime

    program = Program.from_bytes(one_kernel(**changes).to_bytes())
    with pytest.raises(shader_tools.ShaderError, match="may not #include|not a path under|not a macro name|not an id"):
        Runtime(program)


def test_glslc_refuses_what_the_gate_missed(tmp_path, monkeypatch):
    """The second line of defence: with the gate switched off, glslc gets no include path and its dependency list
    is checked, so a relative path that reaches the file is refused without quoting glslc."""
    word, _ = secret_files(tmp_path)
    monkeypatch.setattr(shader_tools, "refusal", lambda source: None)
    up = "../" * 12
    variant = shader_tools.Variant("custom:t", (), text=adding_shader(f'#include "{up}{str(word).lstrip("/")}"\n'))
    assert variant.from_model
    with pytest.raises(shader_tools.ShaderError, match="glslc read one") as err:
        shader_tools.compile_variants([variant])
    assert SECRET not in str(err.value)


def test_a_registered_ops_own_shader_is_not_model_glsl(monkeypatch):
    """A registered declaration's shader is the user's file and may include theirs; the same text in a model is
    gated like any model's."""
    from tosa_vk import custom

    own = SCALE_ADD.replace("void main", "// see include/common.glsl\nvoid main")
    shader = custom.Shader(own, "<inline>", (custom.buffer(0),), (custom.buffer(1),))
    monkeypatch.setitem(custom.REGISTRY, ("com.example", "own"), custom.CustomOp("com.example", "own", shader=shader))
    assert not shader_tools.Variant("custom:own", (), text=own).from_model
    assert shader_tools.Variant("custom:other", (), text=own + "\n").from_model


def test_model_glsl_errors_still_name_the_line():
    text = SCALE_ADD.replace("* 2.0", "* undeclared_thing")
    variant = shader_tools.Variant("custom:t", (), text=text, op="CUSTOM #0")
    with pytest.raises(shader_tools.ShaderError, match="undeclared_thing"):
        shader_tools.compile_variants([variant])


# ---- issue 46: the gate is an allow-list over the preprocessor's tokens -------------------------------------------

HIDERS = ['#define X "/*"', '#pragma message("/*")', '#error "/*"', '#define Y "//"']


@pytest.mark.parametrize("hider", HIDERS)
def test_a_string_cannot_hide_an_include_from_the_gate(tmp_path, hider):
    """Before, the gate read `"/*"` as a comment opener and passed the #include after it; glslc then opened the FIFO
    (a load hung until the tool timeout; here the watcher lets it go and counts it)."""
    from fuzz_glsl import Watch

    watch = Watch(tmp_path, 1)
    try:
        source = SCALE_ADD.replace(
            "layout(local",
            f'{hider}\n#extension GL_GOOGLE_include_directive : enable\n#include "{watch.paths[0]}"\nlayout(local',
        )
        assert refusal(source) is not None
        variant = shader_tools.Variant("custom:t", (), text=source, op="CUSTOM #0")
        with pytest.raises(shader_tools.ShaderError, match="double quote|may not #include"):
            shader_tools.compile_variants([variant])
    finally:
        watch.close()
    assert watch.opened == 0


@pytest.mark.parametrize(
    "source",
    [
        '// a "quoted" word\n',
        "#pragma foo\n",
        "#pragma include(x)\n",
        "#pragma once\n",
        "#line 3 7\n",
        "#line X\n",
        "#ident x\n",
        "#version 450 foo\n",
        "int a = 1 # 2;\n",
        "#if 1 # 2\n#endif\n",
        "// caf\u00e9\n",
        "float a;\x85\n",
        "float a;\v\n",
        "#extension GL_ARB_shading_language_include : enable\n",
        "#in\\\nclude <x.glsl>\n",
    ],
)
def test_gate_refuses_what_model_glsl_has_no_use_for(source):
    assert refusal(source) is not None


@pytest.mark.parametrize(
    "source",
    [
        "#pragma optimize(off)\n#pragma debug(on)\n#pragma STDGL invariant(all)\n",
        "#line 12\n",
        "// don't, won't\n",
        "#define CAT(a, b) a##b\n#\n#undef CAT\n",
        "#extension GL_EXT_shader_explicit_arithmetic_types : require\n",
        "#ifdef X\n#elif 1\n#else\n#endif\n#error stop here\n",
    ],
)
def test_gate_passes_what_model_glsl_uses(source):
    assert refusal(SCALE_ADD.replace("layout(local", source + "layout(local", 1)) is None


# ---- issue 46: where the compiler runs on a model's GLSL ------------------------------------------------------------


def test_compiler_on_model_glsl_runs_under_a_memory_limit(tmp_path):
    done = shader_tools._run_compiler(["sh", "-c", "ulimit -v"], tmp_path, model=True)
    assert int(done.stdout) * 1024 == shader_tools.MODEL_MEMORY
    assert shader_tools._run_compiler(["sh", "-c", "ulimit -v"], tmp_path, model=False).stdout.strip() == "unlimited"


@pytest.mark.parametrize("tool", ["glslc", "glslang"])
def test_a_fifo_the_gate_missed_stops_the_compile_in_time(tmp_path, monkeypatch, tool):
    """With the gate switched off, an include of a FIFO nobody writes blocks the compiler: the model's compile stops
    at its own short limit with a ShaderError naming the op (before, the tool timeout was 120 s). (glslang was seen,
    once, to give up on the FIFO at once instead: a clean error naming the op too.)"""
    if tool == "glslc" and shader_tools.glsl_compiler.glslc() is None:
        pytest.skip("no glslc")
    fifo = tmp_path / "f.glsl"
    os.mkfifo(fifo)
    monkeypatch.setattr(shader_tools, "refusal", lambda source: None)
    monkeypatch.setattr(shader_tools, "MODEL_TIMEOUT_S", 2)
    text = SCALE_ADD.replace(
        "layout(local", f'#extension GL_GOOGLE_include_directive : enable\n#include "{fifo}"\nlayout(local'
    )
    variant = shader_tools.Variant("custom:t", (), text=text, op="CUSTOM #0")
    run = shader_tools._glslc if tool == "glslc" else shader_tools._glslang
    with pytest.raises(
        shader_tools.ShaderError, match=r"did not finish within 2 s \(CUSTOM #0|CUSTOM #0 \[t\]:3: '#include'"
    ):
        run([variant], **({"includes": False} if tool == "glslc" else {}))


def test_a_dev_zero_include_the_gate_missed_ends_in_an_error(monkeypatch):
    """/dev/zero grew the compiler past 1 GB before; under the address-space limit it fails instead."""
    monkeypatch.setattr(shader_tools, "refusal", lambda source: None)
    monkeypatch.setattr(shader_tools, "MODEL_MEMORY", 256 << 20)
    text = SCALE_ADD.replace("layout(local", '#include "/dev/zero"\nlayout(local')
    with pytest.raises(shader_tools.ShaderError):
        shader_tools.compile_variants([shader_tools.Variant("custom:t", (), text=text, op="CUSTOM #0")])
