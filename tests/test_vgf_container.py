"""vgf/: our VGF container reader / writer. Round trips, Arm's vgf_dump accepts what we write (and reports what we
wrote), malformed files fail with clear VGFErrors, and a mutation fuzz never crashes or hangs."""

from __future__ import annotations

import json
import random
import struct
import subprocess
from pathlib import Path

import pytest

import vgf
from vgf import VGF, Binding, Constant, DescriptorSet, Module, PushConstantRange, Resource, Segment, VGFError

SPIRV = struct.pack("<5I", 0x07230203, 0x00010500, 0, 8, 0)


def sample() -> VGF:
    return VGF(
        modules=[
            Module("add_0", "COMPUTE", "main", SPIRV, "SPIR-V"),
            Module("g", "COMPUTE", "main", "#version 450\n", "GLSL"),
        ],
        segments=[
            Segment(
                "compute_segment_0",
                0,
                "COMPUTE",
                [DescriptorSet([Binding(0, 0), Binding(1, 1), Binding(2, 2)], 0)],
                [Binding(0, 0), Binding(1, 1)],
                [Binding(2, 2)],
                dispatch_shape=(4, 1, 1),
                push_constant_ranges=[PushConstantRange(32, 0, 16)],
            )
        ],
        resources=[
            Resource("INPUT", 7, 100, (1, 8)),
            Resource("CONSTANT", 7, 99, (3,)),
            Resource("OUTPUT", 7, 100, (1, 8), alias_group=0),
            Resource(
                "INTERMEDIATE",
                1,
                109,
                (4, 4, 4),
                sampler={"min_filter": 1, "mag_filter": 1, "address_mode_u": 2, "address_mode_v": 2, "border_color": 0},
            ),
        ],
        constants=[Constant(1, struct.pack("<3i", 1, -2, 3))],
        inputs=[Binding(0, 0), Binding(1, 1)],
        outputs=[Binding(2, 2)],
        input_names=["x", "w"],
        output_names=["y"],
    )


def vgf_dump() -> str | None:
    try:
        import vgf_lib
    except ImportError:
        return None
    path = Path(vgf_lib.__file__).resolve().parent / "binaries" / "bin" / "vgf_dump"
    return str(path) if path.is_file() else None


def test_round_trip():
    v = sample()
    data = vgf.write_vgf(v)
    assert data[:4] == b"VGF1" and data[8:11] == bytes([0, 5, 0])
    for i in range(4):  # every section 8-byte aligned, inside the file
        offset, size = struct.unpack_from("<QQ", data, 16 + 16 * i)
        assert offset % 8 == 0 and offset + size <= len(data)
    assert vgf.read_vgf(data) == v


def test_vgf_dump_accepts_and_agrees(tmp_path):
    exe = vgf_dump()
    if exe is None:
        pytest.skip("ai-ml-sdk-vgf-library (vgf_dump) is not installed")
    v = sample()
    v.modules = v.modules[:1]
    vgf.save_vgf(v, tmp_path / "s.vgf")
    out = subprocess.run([exe, "-i", str(tmp_path / "s.vgf")], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    d = json.loads(out.stdout)
    assert d["header"] == {"major": 0, "minor": 5, "patch": 0}
    assert [m["name"] for m in d["modules"]] == ["add_0"] and d["modules"][0]["type"] == "COMPUTE"
    seg = d["model_sequence"]["segments"][0]
    assert seg["dispatch_shape"] == [4, 1, 1] and seg["name"] == "compute_segment_0"
    assert [[b["binding"], b["mrt_index"]] for b in seg["descriptor_set_infos"][0]["bindings"]] == [
        [0, 0],
        [1, 1],
        [2, 2],
    ]
    assert [r["category"] for r in d["resources"]] == ["INPUT", "CONSTANT", "OUTPUT", "INTERMEDIATE"]
    assert d["resources"][2]["alias_group_id"] == 0 and d["resources"][0]["shape"] == [1, 8]
    assert [i["name"] for i in d["model_sequence"]["inputs"]] == ["x", "w"]
    assert d["constants"][0]["mrt_index"] == 1
    dumped = subprocess.run(
        [exe, "-i", str(tmp_path / "s.vgf"), "--dump-constant", "0", "-o", str(tmp_path / "c.bin")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert dumped.returncode == 0 and (tmp_path / "c.bin").read_bytes() == v.constants[0].data


def _expect(data: bytes, pattern: str):
    with pytest.raises(VGFError, match=pattern) as err:
        vgf.read_vgf(data, file="m.vgf")
    assert str(err.value).startswith("m.vgf:")


def test_malformed_inputs_give_clear_errors():
    data = vgf.write_vgf(sample())
    _expect(b"", "empty file")
    _expect(data[:100], r"truncated: 100 bytes")
    _expect(b"TOSA" + data[4:], r"not a VGF file \(magic b'TOSA'")
    _expect(data[:-8], r"constant section .* lies outside the file")
    newer = bytearray(data)
    newer[9] = 6
    _expect(bytes(newer), r"VGF format 0\.6\.0 is newer than this reader")
    major = bytearray(data)
    major[8] = 1
    _expect(bytes(major), r"VGF format 1\.5\.0 is newer")
    bad = bytearray(data)
    struct.pack_into("<Q", bad, 16, 1 << 40)
    _expect(bytes(bad), r"module section .* lies outside")
    odd = bytearray(data)
    struct.pack_into("<Q", odd, 32, struct.unpack_from("<Q", data, 32)[0] + 4)
    _expect(bytes(odd), r"model-sequence section offset \d+ is not 8-byte aligned")
    wrong_ref = sample()
    wrong_ref.segments[0].module_index = 7
    with pytest.raises(VGFError, match="names module 7"):
        vgf.write_vgf(wrong_ref)
    const = bytearray(data)
    off = struct.unpack_from("<Q", data, 64)[0]
    const[off : off + 8] = b"CONST99\0"
    _expect(bytes(const), r"constant section: starts with b'CONST99")


def test_fuzz_never_crashes_or_hangs():
    """A few thousand random mutations (bytes flipped, ranges zeroed, truncations): each read returns a VGF or
    raises VGFError (a hang is caught by the suite's timeout)."""
    rng = random.Random(1234)
    data = vgf.write_vgf(sample())
    outcomes = {"ok": 0, "error": 0}
    for i in range(3000):
        buf = bytearray(data)
        kind = i % 4
        if kind == 0:
            for _ in range(rng.randint(1, 8)):
                buf[rng.randrange(len(buf))] = rng.randrange(256)
        elif kind == 1:
            at = rng.randrange(len(buf) - 4)
            struct.pack_into("<I", buf, at, rng.choice([0, 0xFFFFFFFF, 0x7FFFFFFF, rng.randrange(1 << 32)]))
        elif kind == 2:
            buf = buf[: rng.randrange(len(buf))]
        else:
            at = rng.randrange(128, len(buf))  # past the header
            buf[at : at + rng.randint(1, 64)] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 64)))
        try:
            vgf.read_vgf(bytes(buf))
            outcomes["ok"] += 1
        except VGFError:
            outcomes["error"] += 1
    assert outcomes["error"] > 1000


def test_vgf_stands_alone():
    """`import vgf` (and its scenario / enum modules) loads nothing of tosa_vk."""
    import subprocess
    import sys

    code = (
        "import sys, vgf, vgf.scenario, vgf.inspect, vgf.vk_enums; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'tosa_vk'))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_enum_values_match_the_vulkan_headers():
    """vgf/vk_enums.py against the `vulkan` package's values (the *_ARM ones are newer than its headers)."""
    import vulkan as vk

    from vgf import vk_enums

    tables = (
        vk_enums.DESCRIPTOR_TYPES,
        {n: f.value for n, f in vk_enums.FORMATS.items()},
        vk_enums.FILTERS,
        vk_enums.ADDRESS_MODES,
        vk_enums.BORDER_COLORS,
    )
    checked = 0
    for table in tables:
        for name, value in table.items():
            if not name.endswith("_ARM"):
                assert getattr(vk, name) == value, name
                checked += 1
    assert checked >= 25
