"""The program cache and the SPIR-V cache read defensively (issue 34): an entry that is a FIFO, a symlink to
/dev/zero, a huge sparse file, a folder or a structure nested 200,000 deep is ignored and rebuilt (one warning),
never a hang or a failed load; an entry rewritten consistently (valid hashes) cannot run a module other than its
kernels' own; folders are created private and a folder others may write is not used; bad budget and usage values
keep the budget. Hang and crash cases run in a subprocess with a timeout."""

from __future__ import annotations

import json
import os
import stat
import struct
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from tosa_vk.store.program_cache import DEFAULT_BUDGET, MAGIC, SUFFIX, Entry, ProgramCache, decode
from tosa_vk.vulkan.shaders import ShaderCache
from tosa_vk.vulkan.variant import Variant

ROOT = Path(__file__).resolve().parent.parent
TESTS = Path(__file__).resolve().parent

# Loads small_graph (test_program_cache) through the cache folder argv[1] with fuse argv[2], runs it and saves the
# outputs to argv[3]; prints whether the program came from the cache and the warnings. Address space capped: a
# huge entry read whole is a MemoryError here, not a machine out of memory.
LOAD = f"""
import json, resource, sys, warnings
import numpy as np
resource.setrlimit(resource.RLIMIT_AS, (24 << 30, 24 << 30))
sys.path.insert(0, {str(TESTS)!r})
from test_program_cache import small_graph
import tosa_vk
graph, feeds = small_graph()
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    with tosa_vk.load(graph, backend="vulkan", cache_dir=sys.argv[1], fuse=sys.argv[2] == "1") as model:
        out = model.run(feeds)
        cached = model.cached
np.savez(sys.argv[3], **out)
print(json.dumps({{"cached": cached, "warnings": [str(w.message) for w in caught]}}))
"""


def load_in_subprocess(cache: Path, out: Path, fuse: bool = True) -> dict:
    done = subprocess.run([sys.executable, "-c", LOAD, str(cache), "1" if fuse else "0", str(out)],
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, f"exit status {done.returncode}: {done.stderr[-3000:]}"
    return json.loads(done.stdout.splitlines()[-1])


def outputs(path: Path) -> list[np.ndarray]:
    with np.load(path) as z:
        return [z[k] for k in z.files]


@pytest.fixture
def filled(tmp_path):
    """(cache folder with small_graph's entry, the entry's path, the outputs of the first load)."""
    cache = tmp_path / "programs"
    first = load_in_subprocess(cache, tmp_path / "first.npz")
    assert not first["cached"]
    (path,) = cache.glob(f"*{SUFFIX}")
    return cache, path, outputs(tmp_path / "first.npz")


def header_of(data: bytes) -> dict:
    (n,) = struct.unpack_from("<I", data, len(MAGIC))
    return json.loads(data[len(MAGIC) + 4 : len(MAGIC) + 4 + n])


def rewrite(path: Path, change) -> None:
    """The entry rewritten consistently (every hash valid): as anyone who can write the folder could."""
    data = path.read_bytes()
    header = header_of(data)
    entry = decode(data, header)
    assert entry is not None
    assert ProgramCache(path.parent).store(header, change(entry, path.parent))


def deep_program(entry: Entry, folder: Path) -> Entry:
    """A Program payload whose JSON nests 200,000 lists deep."""
    text = b"[" * 200_000 + b"]" * 200_000
    return Entry(b"TOSAVK-DATA\x00\x00\x00\x00\x01" + struct.pack("<Q", len(text)) + text, entry.pipeline_data,
                 entry.spirv)  # fmt: skip


def replace_entry(path: Path, how: str) -> None:
    if how == "deep-program":
        rewrite(path, deep_program)
        return
    if how == "deep-header":
        data = path.read_bytes()
        head = b"[" * 200_000 + b"]" * 200_000
        (n,) = struct.unpack_from("<I", data, len(MAGIC))
        path.write_bytes(MAGIC + struct.pack("<I", len(head)) + head + data[len(MAGIC) + 4 + n :])
        return
    path.unlink()
    if how == "fifo":
        os.mkfifo(path)
    elif how == "dev-zero":
        path.symlink_to("/dev/zero")
    elif how == "sparse":
        with open(path, "wb") as f:
            f.truncate(30 << 30)  # 30 GB, no blocks
    elif how == "directory":
        path.mkdir()
    else:
        raise AssertionError(how)


@pytest.mark.vulkan
@pytest.mark.parametrize("how", ["fifo", "dev-zero", "sparse", "directory", "deep-program", "deep-header"])
def test_an_odd_entry_is_ignored_and_rebuilt_never_a_hang_or_a_failed_load(filled, tmp_path, how):
    cache, path, want = filled
    replace_entry(path, how)
    got = load_in_subprocess(cache, tmp_path / "got.npz")
    assert not got["cached"]
    damaged = [w for w in got["warnings"] if "damaged or stale" in w]
    assert len(damaged) == 1, got["warnings"]
    assert all(np.array_equal(a, b) for a, b in zip(outputs(tmp_path / "got.npz"), want))
    if how != "directory":  # (a folder in its place cannot be replaced by a file: the entry is never stored)
        assert load_in_subprocess(cache, tmp_path / "again.npz")["cached"]  # rebuilt whole


def swap_modules(entry: Entry, folder: Path) -> Entry:
    """The modules in another order; a lone module swapped for a shipped one of another kernel."""
    from tosa_vk.tools.conformance.shipped import manifest
    from tosa_vk.vulkan.builtin import library

    other = [library().get(v) for v in manifest()[:1]]
    spirv = entry.spirv[1:] + entry.spirv[:1] if len(entry.spirv) > 1 else other
    return Entry(entry.program, entry.pipeline_data, spirv)  # type: ignore[arg-type]


def flip_word(entry: Entry, folder: Path) -> Entry:
    module = bytearray(entry.spirv[0])
    module[len(module) // 2] ^= 0x40
    return Entry(entry.program, entry.pipeline_data, [bytes(module), *entry.spirv[1:]])


def drop_a_binding(entry: Entry, folder: Path) -> Entry:
    """Every kernel binds one buffer fewer than its shader declares (valid SPIR-V, a Program that decodes)."""
    from dataclasses import replace

    from tosa_vk.program import Kernel, Program

    program = Program.from_bytes(entry.program)
    program.steps = [replace(s, bindings=s.bindings[:-1]) if isinstance(s, Kernel) else s for s in program.steps]
    return Entry(program.to_bytes(), entry.pipeline_data, entry.spirv)


def texel_formats_on_storage_bindings(entry: Entry, folder: Path) -> Entry:
    """Every binding given a texel format while its descriptor stays a storage buffer (crashed lavapipe in
    vkUpdateDescriptorSets: found by the cache fuzzer)."""
    from dataclasses import replace

    from tosa_vk.program import Kernel, Program

    program = Program.from_bytes(entry.program)
    program.steps = [replace(s, texels=("VK_FORMAT_R32_SFLOAT",) * len(s.bindings)) if isinstance(s, Kernel) else s
                     for s in program.steps]  # fmt: skip
    return Entry(program.to_bytes(), entry.pipeline_data, entry.spirv)


def input_buffer_reshaped(entry: Entry, folder: Path) -> Entry:
    """The input's buffer a scalar while the signature says (1, 4, 4, 8) (a raw ValueError at run before)."""
    from dataclasses import replace

    from tosa_vk.program import Program

    program = Program.from_bytes(entry.program)
    program.buffers["x"] = replace(program.buffers["x"], shape=())
    return Entry(program.to_bytes(), entry.pipeline_data, entry.spirv)


def shader_outside_the_library(entry: Entry, folder: Path) -> Entry:
    """Every kernel names a shader outside shaders/: its source is never read (a FIFO there would hang the load)."""
    from dataclasses import replace

    from tosa_vk.program import Kernel, Program

    fifo = folder.parent / "fifo"  # (the test's tmp_path)
    os.mkfifo(f"{fifo}.comp")
    program = Program.from_bytes(entry.program)
    shader = os.path.relpath(fifo, ROOT / "shaders")
    program.steps = [replace(s, shader=shader) if isinstance(s, Kernel) else s for s in program.steps]
    return Entry(program.to_bytes(), entry.pipeline_data, entry.spirv)


def fewer_modules(entry: Entry, folder: Path) -> Entry:
    return Entry(entry.program, entry.pipeline_data, entry.spirv[:-1])


@pytest.mark.vulkan
@pytest.mark.parametrize("fuse", [False, True], ids=["shipped", "fused"])
@pytest.mark.parametrize(
    "change",
    [
        swap_modules,
        flip_word,
        drop_a_binding,
        fewer_modules,
        texel_formats_on_storage_bindings,
        input_buffer_reshaped,
        shader_outside_the_library,
    ],
)
def test_a_consistently_rewritten_entry_is_checked_never_run(tmp_path, fuse, change):
    """Built-in kernels' SPIR-V must be the shipped library's (unfused: every kernel shipped) or the SPIR-V cache's
    (fused: compiled at load), and every kernel's interface must match its module; otherwise: rebuilt."""
    cache = tmp_path / "programs"
    first = load_in_subprocess(cache, tmp_path / "first.npz", fuse)
    assert not first["cached"]
    (path,) = cache.glob(f"*{SUFFIX}")
    rewrite(path, change)
    got = load_in_subprocess(cache, tmp_path / "got.npz", fuse)
    assert not got["cached"]
    assert len([w for w in got["warnings"] if "damaged or stale" in w]) == 1, got["warnings"]
    assert all(np.array_equal(a, b) for a, b in zip(outputs(tmp_path / "got.npz"), outputs(tmp_path / "first.npz")))


@pytest.mark.parametrize("value", ["abc", "-5", "0", "nan", "inf", "1e400", " "])
def test_a_bad_budget_variable_warns_and_keeps_the_default(monkeypatch, value):
    monkeypatch.setenv("TOSA_VK_CACHE_MAX_MB", value)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        from tosa_vk.store import program_cache

        program_cache._warned.clear()
        budget = ProgramCache("unused").budget
    assert budget == DEFAULT_BUDGET
    if value.strip():
        assert len(caught) == 1 and "TOSA_VK_CACHE_MAX_MB" in str(caught[0].message)


def test_a_good_budget_variable_is_taken(monkeypatch):
    monkeypatch.setenv("TOSA_VK_CACHE_MAX_MB", "2.5")
    assert ProgramCache("unused").budget == int(2.5 * 2**20)


@pytest.mark.parametrize("usage", ["-100000000000", "abc", "1e3", "99999999999999999999999", "+5", ""])
def test_a_usage_file_that_is_not_a_count_is_measured(tmp_path, usage):
    """The budget holds whatever the usage file says: a negative total used to switch it off."""
    cache = ProgramCache(tmp_path)
    headers = [cache.header(f"{i:064x}", "uuid", "driver") for i in range(3)]
    for i, header in enumerate(headers[:2]):
        assert cache.store(header, Entry(b"p" * 1000, b"", []))
        os.utime(cache.path(header["key"]), (i, i))
    size = cache.path(headers[0]["key"]).stat().st_size
    (tmp_path / "usage").write_text(usage)
    cache.budget = 3 * size + 10  # whatever the file says, the folder is measured: 3 entries, under the budget
    assert cache.store(headers[2], Entry(b"p" * 1000, b"", []))
    assert sum(p.stat().st_size for p in cache.entries()) <= cache.budget
    assert int((tmp_path / "usage").read_text()) == 3 * size


def test_cache_folders_are_created_private(tmp_path, monkeypatch):
    monkeypatch.setenv("TOSA_VK_CACHE", str(tmp_path / "root"))
    cache = ProgramCache()
    assert cache.store(cache.header("0" * 64, "uuid", "driver"), Entry(b"p", b"", []))
    shaders = ShaderCache()
    for folder in (tmp_path / "root", cache.dir, shaders.dir):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder


@pytest.mark.parametrize("how", ["group-writable", "world-writable", "other-owner"])
def test_a_folder_others_may_write_is_not_used(tmp_path, how):
    folder = tmp_path / "programs"
    folder.mkdir(mode=0o700)
    if how == "other-owner":
        if os.geteuid() != 0:
            pytest.skip("giving a folder away needs root")
        os.chown(folder, 12345, 12345)
    else:
        folder.chmod(0o770 if how == "group-writable" else 0o777)
    cache = ProgramCache(folder)
    header = cache.header("1" * 64, "uuid", "driver")
    with pytest.warns(RuntimeWarning, match="not trusted"):
        assert not cache.store(header, Entry(b"p", b"", []))
    assert not list(folder.iterdir())
    assert cache.load(header) is None  # (warned once per folder)
    shaders_dir = tmp_path / "spirv"
    shaders_dir.mkdir(mode=0o700)
    if how == "other-owner":
        os.chown(shaders_dir, 12345, 12345)
    else:
        shaders_dir.chmod(0o777)
    with pytest.warns(RuntimeWarning, match="SPIR-V cache .* is not trusted"):
        shaders = ShaderCache(shaders_dir)
    shaders.get(Variant("custom:t", (), text=GLSL))
    assert shaders.compiled == 1 and not list(shaders_dir.iterdir())


GLSL = (
    "#version 450\nlayout(local_size_x = 1) in;\nlayout(binding = 0) buffer B { float b[]; };\n"
    "void main() { b[0] = 1.0; }\n"
)

# A SPIR-V cache whose files for one variant are a FIFO (module) and a symlink to /dev/zero (hash): compiled again.
SHADERS = f"""
import os, sys
from pathlib import Path
from tosa_vk.vulkan.shaders import ShaderCache
from tosa_vk.vulkan.variant import Variant
v = Variant("custom:t", (), text={GLSL!r})
folder = Path(sys.argv[1])
cache = ShaderCache(folder)
key = cache.key(v)
os.mkfifo(folder / (key + ".spv"))
(folder / (key + ".sha256")).symlink_to("/dev/zero")
again = ShaderCache(folder)
module = again.get(v)
print(again.compiled, int.from_bytes(module[:4], "little") == 0x07230203)
"""


def test_a_spirv_cache_file_that_is_a_fifo_is_ignored(tmp_path):
    done = subprocess.run([sys.executable, "-c", SHADERS, str(tmp_path / "spirv")], capture_output=True, text=True,
                          timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["1", "True"]


# Stores one entry in the program cache folder argv[1] (as a load that rebuilds does), which rewrites the usage file.
STORE = """
import sys
from tosa_vk.store.program_cache import Entry, ProgramCache
cache = ProgramCache(sys.argv[1])
assert cache.store(cache.header("0" * 64, "uuid", "driver"), Entry(b"p" * 1000, b"", []))
"""


@pytest.mark.parametrize("how", ["fifo", "link"])
def test_a_usage_file_that_is_a_fifo_or_a_link_is_replaced_never_waited_on_nor_followed(tmp_path, how):
    """Issue 46: the usage record was written with open(): a FIFO hung the store, a symlink was written through."""
    cache = tmp_path / "programs"
    cache.mkdir(mode=0o700)
    victim = tmp_path / "victim"
    victim.write_text("not the cache's")
    if how == "fifo":
        os.mkfifo(cache / "usage")
    else:
        (cache / "usage").symlink_to(victim)
    done = subprocess.run([sys.executable, "-c", STORE, str(cache)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    assert victim.read_text() == "not the cache's"
    usage = os.lstat(cache / "usage")
    assert stat.S_ISREG(usage.st_mode) and stat.S_IMODE(usage.st_mode) == 0o600
    assert int((cache / "usage").read_text()) > 1000


def test_an_empty_cache_variable_means_the_default_not_the_working_folder(tmp_path, monkeypatch):
    """Issue 46: TOSA_VK_CACHE="" made programs/ and spirv/ in the current folder."""
    from tosa_vk.paths import cache_root

    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TOSA_VK_CACHE", "")
    assert cache_root() == tmp_path / "home" / ".cache" / "tosa_vk"
    assert ProgramCache().dir == tmp_path / "home" / ".cache" / "tosa_vk" / "programs"
    assert ShaderCache().dir == tmp_path / "home" / ".cache" / "tosa_vk" / "spirv"


def test_a_killed_conformance_generators_work_folder_is_swept(tmp_path, monkeypatch):
    """A generator killed mid-run (SIGKILL, a test timeout) leaves its `.build-*` work folder, hundreds of MiB; the
    next generate() of that selection removes it under the selection's lock, and leaves other selections' alone."""
    from tosa_vk.tools.conformance.generate import Selection, cache_folder, generate

    monkeypatch.setenv("TOSA_VK_CACHE", str(tmp_path))
    sel = Selection(test_type="negative")
    final = cache_folder(sel)
    final.mkdir(parents=True)
    (final / "complete.json").write_text("{}")
    left = final.parent / f".build-{sel.key()}-k1ll3d"
    (left / "shard0").mkdir(parents=True)
    (left / "shard0" / "desc.json").write_text("{}")
    other = final.parent / ".build-another-selection-x"
    other.mkdir()
    assert generate(sel) == final
    assert not left.exists() and other.exists()
