"""Model-supplied shaders and kernels are untrusted (issue 15): no file reads through #include, bounded tool time,
and set indices / group counts / push-constant sizes checked against the device before any Vulkan call."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace

import numpy as np
import pytest
from helpers import error_in_subprocess
from test_custom_ops import SCALE_ADD, payload, single_custom_graph

import tosa_vk
from tosa_vk import TosaError
from tosa_vk.program import Buffer, Kernel, Program
from tosa_vk.vulkan import shaders as shader_tools

HOSTNAME = """#version 450
#include "../../../../../etc/hostname"
layout(local_size_x = 1) in;
void main() {}
"""


def test_payload_glsl_cannot_include_files():
    graph = single_custom_graph(payload(shader_code=HOSTNAME))
    with pytest.raises(TosaError, match="may not #include files"):
        tosa_vk.compile(graph)
    with pytest.raises(TosaError, match="may not #include files"):
        tosa_vk.compile(single_custom_graph(payload(shader_code=HOSTNAME.replace("#include", "  #  include"))))


def test_glslc_has_a_time_limit(monkeypatch, tmp_path):
    monkeypatch.setattr(shader_tools, "MODEL_TIMEOUT_S", 0.001)  # (the text is a model's GLSL)
    cache = shader_tools.ShaderCache(tmp_path)
    with pytest.raises(shader_tools.ShaderError, match="did not finish within"):
        cache.get(shader_tools.Variant("x", (), text="#version 450\nlayout(local_size_x = 1) in;\nvoid main() {}\n"))


def kernel(**changes) -> Program:
    """A one-kernel program of a trivial shader with the given slots / groups / push constants."""
    source = (
        "#version 450\nlayout(local_size_x = 1) in;\nlayout(set = 0, binding = 0) buffer B { uint b[]; };\n"
        "void main() {}\n"
    )
    k = Kernel("CUSTOM #0 'x'", "custom:test", (), ("x",), b"", (1, 1, 1), writes=("x",), source=source)
    return Program([replace(k, **changes)], {"x": Buffer("x", 0, 16, (4,), np.dtype(np.uint32))}, 16, [], ["x"])


@pytest.mark.parametrize(
    "changes,message",
    [
        ({"slots": ((100000, 0),), "descriptors": ("VK_DESCRIPTOR_TYPE_STORAGE_BUFFER",)}, "descriptor set 100000"),
        ({"slots": ((-1, 0),), "descriptors": ("VK_DESCRIPTOR_TYPE_STORAGE_BUFFER",)}, "descriptor set -1"),
        ({"groups": (1 << 31, 1, 1)}, "dispatch of"),
        ({"groups": (0, 1, 1)}, "dispatch of"),
        ({"push_constants": bytes(4096)}, "4096 bytes of push constants"),
    ],
)
def test_kernel_numbers_are_checked_against_the_device(tmp_path, changes, message):
    """In a subprocess: these numbers crashed the driver (set 100000: SIGSEGV / heap corruption) or hung it."""
    path = tmp_path / "program.bin"
    path.write_bytes(kernel(**changes).to_bytes())
    imports = "from tosa_vk.program import Program\nfrom tosa_vk.vulkan.runtime import Runtime"
    assert message in error_in_subprocess(imports, f"Runtime(Program.from_bytes(open({str(path)!r}, 'rb').read()))")


def test_payload_shader_size_is_bounded():
    with pytest.raises(TosaError, match="a payload shader may have at most"):
        tosa_vk.compile(single_custom_graph(payload(shader_code="//" + "x" * (16 << 20))))


def test_spirv_payloads_need_the_validator(monkeypatch):
    monkeypatch.setattr(shader_tools, "find_tool", lambda name: None)  # neither on PATH nor beside this Python
    with pytest.raises(shader_tools.ShaderError, match="spirv-val is not installed"):
        shader_tools.check_spirv(b"\x03\x02\x23\x07" + bytes(16), "CUSTOM #0 'y'")


def test_an_unusable_cache_folder_does_not_stop_a_load(device, tmp_path, monkeypatch):
    """TOSA_VK_CACHE somewhere nothing can be written (here: below a regular file): shaders compile in memory."""
    (tmp_path / "a_file").write_text("")
    monkeypatch.setenv("TOSA_VK_CACHE", str(tmp_path / "a_file" / "cache"))
    b = tosa_vk.Builder()
    x = b.input("x", (3,), "fp32")
    b.output(b.add(x, x, name="y"))
    with tosa_vk.load(b.build(), backend="vulkan", device=device) as model:
        assert model.run(x=np.ones(3, np.float32))["y"].tolist() == [2.0, 2.0, 2.0]


PUSH8 = SCALE_ADD.replace(
    "void main() {", "layout(push_constant) uniform P { float scale; float bias; } p;\nvoid main() {"
).replace("* 2.0 + 5.0", "* p.scale + p.bias")


@pytest.mark.parametrize(
    "changes,message",
    [
        # the shader's set 0 binding 1 is bound at set 3 (found: set 8: ran and returned garbage)
        ({"output_0_descriptorset": 3}, "declares storage buffer at set 0 binding 1, which the kernel does not bind"),
        # bindings swapped off what the shader declares (found: SIGSEGV at pipeline creation)
        ({"input_0_binding": 5}, "declares storage buffer at set 0 binding 0"),
        # a storage buffer declared, a storage image bound
        (
            {
                "output_0_type": "Image",
                "output_0_vkdescriptortype": "VK_DESCRIPTOR_TYPE_STORAGE_IMAGE",
                "output_0_vkformat": "VK_FORMAT_R32G32B32A32_SFLOAT",
            },
            "set 0 binding 1 is storage buffer in the shader but bound as storage image",
        ),
        # an 8-byte push block given 4 bytes (found: silent zeros)
        (
            {"shader_code": PUSH8, "push_constants": "scale: 4"},
            "push-constant block spans 8 bytes but the kernel pushes 4",
        ),
    ],
)
def test_payload_interface_is_checked_before_any_vulkan_call(tmp_path, changes, message):
    """In a subprocess: a regression here crashes the driver, which must not take pytest with it."""
    path = tmp_path / "model.tosa"
    tosa_vk.save_graph(single_custom_graph(payload(**changes), shape=(1, 4, 4, 4)), path)
    assert message in error_in_subprocess("import tosa_vk", f"tosa_vk.load({str(path)!r}, backend='vulkan')")


def test_a_push_block_the_payload_covers_runs(device):
    graph = single_custom_graph(payload(shader_code=PUSH8, push_constants="scale: 4, bias: 4"), shape=(64,))
    with tosa_vk.load(graph, backend="vulkan", device=device) as model:
        out = model.run(x=np.ones(64, np.float32))["y"]
    assert out.tolist() == [0.0] * 64  # the payload's push constants are zero-filled (nothing says what goes there)


def test_robust_buffer_access_is_on_where_the_device_has_it(device):
    """A model's shader reading past its buffers gets zeros, not other tensors' memory (lavapipe has it)."""
    assert device.info.features["robustBufferAccess"]


RUNAWAY = """#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) buffer In { float x[]; };
layout(set = 0, binding = 1) buffer Out { float y[]; };
void main() {
  float acc = x[gl_GlobalInvocationID.x % 64u];
  for (uint i = 0u; i < 60000u; i++) { acc = sin(acc) + 1.0; }
  y[gl_GlobalInvocationID.x % 64u] = acc;
}
"""


def runaway_graph():
    """Hours of work on a CPU device: 65535 x 64 groups of 64 invocations, 60,000 iterations each."""
    return single_custom_graph(payload(shader_code=RUNAWAY, workgroup_sizes=[65535, 64, 1]), shape=(64,))


def test_a_runaway_shader_ends_at_the_timeout_and_close_does_not_wait_for_it(tmp_path):
    path = tmp_path / "runaway.tosa"
    tosa_vk.save_graph(runaway_graph(), path)
    code = (
        "import sys, time, numpy as np, tosa_vk\n"
        f"m = tosa_vk.load({str(path)!r}, backend='vulkan', timeout_s=2)\n"
        "t = time.monotonic()\n"
        "try:\n    m.run(x=np.ones(64, np.float32))\nexcept Exception as err:\n    print(err)\n"
        "m.close()\nprint(f'done in {time.monotonic() - t:.1f} s', flush=True)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert "the run did not finish within 2 s" in done.stdout, done.stdout + done.stderr[-2000:]
    assert float(done.stdout.split("done in ")[1].split()[0]) < 10


def _default_sigint() -> None:
    """A Ctrl-C test's child takes SIGINT's default action: a test run started in the background of a shell
    without job control ignores SIGINT, and children inherit that (Python then installs no handler at all)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_stops_a_cli_run(tmp_path):
    import signal
    import time

    path = tmp_path / "runaway.tosa"
    tosa_vk.save_graph(runaway_graph(), path)
    np.save(tmp_path / "x.npy", np.ones(64, np.float32))
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tosa_vk.tools.cli",
            "run",
            str(path),
            "--backend",
            "vulkan",
            "-i",
            f"x={tmp_path / 'x.npy'}",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_default_sigint,
    )
    time.sleep(8)  # loaded and running
    start = time.monotonic()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err[-2000:]
    assert "tosa-vk: interrupted" in err and "Traceback" not in err
    assert time.monotonic() - start < 10


def test_ctrl_c_ends_the_cli_even_when_the_main_thread_misses_it():
    """A main thread stuck in a C call, or one that loses KeyboardInterrupt in a finalizer, cannot act on Ctrl-C:
    the command's interrupt watcher ends the process after INTERRUPT_GRACE_S."""
    import signal
    import time

    code = (
        "import sys, time\n"
        "from tosa_vk import cli\n"
        "cli._watch_interrupts()\n"
        "ready = False\n"
        "while True:\n"
        "    try:  # 'ready' inside it: an interrupt raised right after the print is swallowed too\n"
        "        if not ready:\n            ready = True\n            print('ready', flush=True)\n"
        "        time.sleep(60)\n"
        "    except KeyboardInterrupt:\n        pass  # swallowed, as inside a finalizer\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_default_sigint,
    )
    assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
    start = time.monotonic()
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130 and "tosa-vk: interrupted" in err
    assert time.monotonic() - start < 10
