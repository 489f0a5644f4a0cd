"""The program cache (issue 17): a compiled model is stored with its SPIR-V and pipeline-cache data, and a later
load of the same model on the same device runs it without compiling (no glslc); a damaged, stale or foreign entry
is rebuilt, never run; concurrent processes and unwritable folders are safe."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import tosa_vk
from tosa_vk import Builder, custom
from tosa_vk.store.program_cache import MAGIC, SUFFIX, ProgramCache
from tosa_vk.tools.cli import main as cli

pytestmark = pytest.mark.vulkan
ROOT = Path(__file__).resolve().parent.parent
MODEL = ROOT / "resources" / "models" / "lstm_unrolled_fp32"


def small_graph(scale: float = 2.0):
    rng = np.random.default_rng(3)
    b = Builder()
    x = b.input("x", (1, 4, 4, 8), "fp32")
    y = b.conv2d(x, rng.standard_normal((8, 3, 3, 8)).astype(np.float32), np.zeros(8, np.float32), np.float32(0),
                 np.float32(0), pad=[1, 1, 1, 1])  # fmt: skip
    b.output(b.clamp(b.mul(y, np.full((1, 1, 1, 1), scale, np.float32)), min_val=np.float32(0), max_val=np.float32(6)))
    return b.build(), {"x": rng.standard_normal((1, 4, 4, 8)).astype(np.float32)}


def load_run(graph, feeds, cache_dir, device):
    with tosa_vk.load(graph, backend="vulkan", device=device, cache_dir=cache_dir) as model:
        return model.cached, model.run(feeds), model.runtime.cache.compiled


def entry(cache_dir: Path) -> Path:
    (path,) = cache_dir.glob(f"*{SUFFIX}")
    return path


def test_a_second_load_runs_the_stored_program_without_glslc(device, tmp_path, monkeypatch):
    graph, feeds = small_graph()
    cached, first, _ = load_run(graph, feeds, tmp_path, device)
    assert not cached and entry(tmp_path).stat().st_size > 0
    monkeypatch.setenv("PATH", "/nonexistent")  # glslc (and every other tool) out of reach
    cached, again, compiled = load_run(graph, feeds, tmp_path, device)
    assert cached and compiled == 0
    assert all(np.array_equal(again[n], first[n]) for n in first)
    other, _ = small_graph(3.0)  # another model: another entry
    assert not load_run(other, feeds, tmp_path, device)[0]
    assert len(list(tmp_path.glob(f"*{SUFFIX}"))) == 2


def test_options_are_part_of_the_key(device, tmp_path):
    graph, feeds = small_graph()
    assert not load_run(graph, feeds, tmp_path, device)[0]
    with tosa_vk.load(graph, backend="vulkan", device=device, cache_dir=tmp_path, fuse=False) as model:
        assert not model.cached
    with tosa_vk.load(graph, backend="vulkan", device=device, cache_dir=False) as model:
        assert not model.cached
    assert len(list(tmp_path.glob(f"*{SUFFIX}"))) == 2


@pytest.mark.parametrize("damage", ["payload-byte", "truncated", "magic", "empty"])
def test_a_damaged_entry_is_rebuilt_never_run(device, tmp_path, damage):
    graph, feeds = small_graph()
    _, want, _ = load_run(graph, feeds, tmp_path, device)
    path = entry(tmp_path)
    data = bytearray(path.read_bytes())
    if damage == "payload-byte":
        data[-100] ^= 0xFF  # inside a SPIR-V module
    elif damage == "truncated":
        data = data[: len(data) // 2]
    elif damage == "magic":
        data[0] ^= 1
    else:
        data = bytearray()
    path.write_bytes(bytes(data))
    with pytest.warns(RuntimeWarning, match="damaged or stale"):
        cached, got, _ = load_run(graph, feeds, tmp_path, device)
    assert not cached
    assert all(np.array_equal(got[n], want[n]) for n in want)
    assert load_run(graph, feeds, tmp_path, device)[0]  # rewritten whole


@pytest.mark.parametrize("field", ["device_uuid", "driver", "build", "format"])
def test_a_header_for_another_device_driver_or_version_is_ignored(device, tmp_path, field):
    graph, feeds = small_graph()
    load_run(graph, feeds, tmp_path, device)
    path = entry(tmp_path)
    data = path.read_bytes()
    at = len(MAGIC)
    (n,) = struct.unpack_from("<I", data, at)
    header = json.loads(data[at + 4 : at + 4 + n])
    header[field] = 99 if field == "format" else "something else"
    head = json.dumps(header, sort_keys=True).encode()
    path.write_bytes(MAGIC + struct.pack("<I", len(head)) + head + data[at + 4 + n :])
    with pytest.warns(RuntimeWarning, match="damaged or stale"):
        assert not load_run(graph, feeds, tmp_path, device)[0]
    assert load_run(graph, feeds, tmp_path, device)[0]


def test_an_unwritable_cache_folder_means_running_without_it(device, tmp_path):
    graph, feeds = small_graph()
    blocked = tmp_path / "a_file"
    blocked.write_text("not a folder")
    with pytest.warns(RuntimeWarning, match="cannot be written"):
        cached, out, _ = load_run(graph, feeds, blocked / "programs", device)
    assert not cached and out


def test_the_budget_drops_the_least_recently_used(tmp_path):
    """A store that takes the running total past the budget drops the least recently used entries, down to
    TRIM_TO of the budget, so the next stores do not scan the folder again."""
    from tosa_vk.store.program_cache import Entry

    cache = ProgramCache(tmp_path)
    headers = [cache.header(f"{i:064x}", "uuid", "driver") for i in range(4)]
    for i, header in enumerate(headers[:3]):
        assert cache.store(header, Entry(b"p" * 1000, b"", []))
        os.utime(cache.path(header["key"]), (i, i))  # used in store order
    size = cache.path(headers[0]["key"]).stat().st_size
    cache.budget = 3 * size + 10  # 4 entries pass it; TRIM_TO (3/4) of it holds 2
    assert cache.store(headers[3], Entry(b"p" * 1000, b"", []))
    assert [p.name[60:64] for p in cache.entries()] == ["0002", "0003"]
    assert int((tmp_path / "usage").read_text()) == 2 * size
    scans = []
    cache._trim = lambda: scans.append(1) or 0
    assert cache.store(cache.header(f"{4:064x}", "uuid", "driver"), Entry(b"p" * 1000, b"", []))
    assert scans == [] and len(cache.entries()) == 3  # under the budget again: no scan


def test_two_processes_filling_one_cache_at_once(tmp_path):
    """Two interpreters load the same model into an empty cache at the same moment: both run it, the entry left
    behind is whole, and a third process runs from it."""
    code = (
        "import sys, json, numpy as np, tosa_vk\n"
        f"m = tosa_vk.load({str(MODEL / 'model.tosa')!r}, backend='vulkan', cache_dir=sys.argv[1])\n"
        f"x = np.load({str(MODEL / 'input-0.npy')!r})\n"
        "out = m.run({m.graph.main.inputs[0]: x})\n"
        "print(json.dumps([m.cached, float(np.asarray(list(out.values())[0]).sum())]))\n"
    )
    env = {**os.environ, "PYTHONWARNINGS": "error::RuntimeWarning"}
    procs = [subprocess.Popen([sys.executable, "-c", code, str(tmp_path)], stdout=subprocess.PIPE, env=env,
                              text=True) for _ in range(2)]  # fmt: skip
    results = [json.loads(p.communicate(timeout=300)[0]) for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert results[0][1] == results[1][1]
    third = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, env=env,
                           timeout=300)  # fmt: skip
    assert third.returncode == 0, third.stderr[-2000:]
    cached, total = json.loads(third.stdout)
    assert cached and total == results[0][1]
    assert not list(tmp_path.glob(".*.tmp"))  # files.write_atomic's temporary names


def test_cache_info_and_clear(device, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("TOSA_VK_CACHE", str(tmp_path))
    graph, feeds = small_graph()
    load_run(graph, feeds, None, device)
    assert cli(["cache", "info", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["entries"] == 1 and info["directory"] == str(tmp_path / "programs")
    assert cli(["cache", "clear"]) == 0
    assert "removed 1 compiled models" in capsys.readouterr().out
    assert not list((tmp_path / "programs").glob(f"*{SUFFIX}"))


def test_a_hit_from_a_file_runs_without_parsing_it(device, tmp_path, monkeypatch):
    # the .tosa file's bytes are the key: a hit runs the stored Program, whose signature stands in for the graph's
    # (with custom ops registered the graph is parsed to look for them, as before)
    monkeypatch.setattr(custom, "REGISTRY", {})
    path = tmp_path / "model.tosa"
    graph, feeds = small_graph()
    tosa_vk.save_graph(graph, path)
    runs = []
    for _ in range(2):
        with tosa_vk.load(path, backend="vulkan", device=device, cache_dir=tmp_path / "cache") as model:
            assert model.inputs == {"x": ((1, 4, 4, 8), "FP32")}
            runs.append((model.cached, model._graph is None, model.run(feeds)))
            assert model.graph.inputs[0].name == "x"  # parsed when asked for
    assert [r[:2] for r in runs] == [(False, False), (True, True)]
    assert all(np.array_equal(runs[0][2][n], runs[1][2][n]) for n in runs[0][2])
    with pytest.raises(tosa_vk.TosaFormatError, match="missing.tosa"):
        tosa_vk.load(tmp_path / "missing.tosa", backend="vulkan", device=device, cache_dir=tmp_path / "cache")


def checked_kernels(monkeypatch) -> list[str]:
    """The kernels whose interfaces loads check from now on (Runtime._check_interface) and ShaderCache.adopt calls."""
    from tosa_vk.vulkan.runtime import Runtime
    from tosa_vk.vulkan.shaders import ShaderCache

    seen: list[str] = []
    interface, adopt = Runtime._check_interface, ShaderCache.adopt

    def checking(self, k):
        seen.append(k.op)
        return interface(self, k)

    def adopting(self, *args):
        seen.append("adopt")
        return adopt(self, *args)

    monkeypatch.setattr(Runtime, "_check_interface", checking)
    monkeypatch.setattr(ShaderCache, "adopt", adopting)
    return seen


def stamp_at(data: bytes) -> int:
    """Where an entry file's stamp starts (after the header, the payload length and the checksum)."""
    (n,) = struct.unpack_from("<I", data, len(MAGIC))
    return len(MAGIC) + 4 + n + 8 + 32


@pytest.mark.parametrize("where", ["payload", "checksum", "stamp"])
def test_a_verified_hit_runs_unchecked_and_a_flipped_byte_is_rebuilt_or_checked(device, tmp_path, monkeypatch, where):
    """Issue 49: the entry the backend stores is verified (its checks ran at compile time): a hit runs it without
    checking again. A flipped byte of the payload or the checksum: rebuilt; of the stamp: checked again, then run."""
    graph, feeds = small_graph()
    _, want, _ = load_run(graph, feeds, tmp_path, device)
    seen = checked_kernels(monkeypatch)
    assert load_run(graph, feeds, tmp_path, device)[0] and seen == []
    path = entry(tmp_path)
    data = bytearray(path.read_bytes())
    data[{"payload": -100, "checksum": stamp_at(data) - 5, "stamp": stamp_at(data) + 5}[where]] ^= 0x10
    path.write_bytes(bytes(data))
    if where == "stamp":
        cached, got, _ = load_run(graph, feeds, tmp_path, device)
        assert cached and "adopt" in seen and len(seen) > 1  # every kernel's interface reflected
    else:
        with pytest.warns(RuntimeWarning, match="damaged or stale"):
            cached, got, _ = load_run(graph, feeds, tmp_path, device)
        assert not cached
    assert all(np.array_equal(got[n], want[n]) for n in want)
    seen.clear()
    assert load_run(graph, feeds, tmp_path, device)[0] and seen == []  # stored verified again


def test_an_entry_verified_by_another_build_is_checked_again(device, tmp_path, monkeypatch):
    """An entry whose stamp another build made (its checks were not this build's) is checked as an unverified one,
    run once it passes, and stamped for this build."""
    from tosa_vk.store.program_cache import stamp

    graph, feeds = small_graph()
    _, want, _ = load_run(graph, feeds, tmp_path, device)
    path = entry(tmp_path)
    data = path.read_bytes()
    at = stamp_at(data)
    path.write_bytes(data[:at] + stamp(data[at - 32 : at], "0.0.1+another") + data[at + 32 :])
    seen = checked_kernels(monkeypatch)
    cached, got, _ = load_run(graph, feeds, tmp_path, device)
    assert cached and "adopt" in seen and len(seen) > 1
    assert all(np.array_equal(got[n], want[n]) for n in want)
    assert path.read_bytes() == data  # stamped for this build again
    seen.clear()
    assert load_run(graph, feeds, tmp_path, device)[0] and seen == []
