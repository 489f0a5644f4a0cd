"""The VGF container (format 0.5.0): dataclasses for its contents, `read_vgf` and `write_vgf`.

File layout (little-endian; see formats/VGF.md of the project's shared documents):
    header (128 bytes)   magic b"VGF1", u16 vk_header_version, u16 0, u8 major / minor / patch, u8 0, u32 0,
                         then {u64 offset, u64 size} for the module, model-sequence, model-resource and constant
                         sections, then 48 zero bytes
    module section       FlatBuffers root ModuleTable           (schema: vgf/schema/vgf.fbs)
    sequence section     FlatBuffers root ModelSequenceTable
    resource section     FlatBuffers root ModelResourceTable
    constant section     b"CONST00\\0", u64 count, count x {u32 mrt_index, i32 sparsity_dim, u64 size, u64 offset},
                         then the payload (offsets relative to its start, each constant padded to 8 bytes)
Every section starts at an 8-byte aligned offset.

The Python flatbuffers runtime has no verifier, so the reader bounds every section by the file, every vector by its
section and the total number of elements it visits, and then checks the cross references (module, MRT and constant
indices): a damaged or hostile file raises one VGFError naming the file, the section and the rule.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path

import flatbuffers
import numpy as np

from .fbs import GLSL as fb_glsl
from .fbs import HLSL as fb_hlsl
from .fbs import SPIRV as fb_spirv
from .fbs import BindingSlot as fb_slot
from .fbs import Description as fb_desc
from .fbs import DescriptorSetInfo as fb_set
from .fbs import GraphConstantBinding as fb_gcb
from .fbs import ModelResourceTable as fb_mrt
from .fbs import ModelResourceTableEntry as fb_entry
from .fbs import ModelSequenceTable as fb_seq
from .fbs import Module as fb_module
from .fbs import ModuleTable as fb_modules
from .fbs import PushConstantRange as fb_push
from .fbs import SamplerConfig as fb_sampler
from .fbs import SegmentInfo as fb_segment
from .fbs.ExtraConfig import ExtraConfig
from .fbs.ModuleCode import ModuleCode

MAGIC = b"VGF1"
HEADER_SIZE = 128
VERSION = (0, 5, 0)  # the format Arm's 0.11.0 tools write and read
CONST_MAGIC = b"CONST00\0"
CONST_ENTRY = struct.Struct("<IiQQ")
UNSET = 0xFFFFFFFF

MODULE_TYPES = ("COMPUTE", "GRAPH")
CATEGORIES = ("INPUT", "OUTPUT", "INTERMEDIATE", "CONSTANT")
CODE_KINDS = {ModuleCode.SPIRV: "SPIR-V", ModuleCode.GLSL: "GLSL", ModuleCode.HLSL: "HLSL"}
SECTIONS = ("module", "model-sequence", "model-resource", "constant")


class VGFError(ValueError):
    """A file is not a readable VGF container (truncated, wrong magic, newer version, bad offsets, corrupt).
    str(err) reads `file: rule`; tosa_vk turns it into a TosaFormatError where it reads a VGF."""

    def __init__(self, rule: str, *, file: str | None = None):
        self.rule, self.file = rule, file
        super().__init__(f"{file}: {rule}" if file else rule)


@dataclass
class Module:
    name: str
    type: str = "COMPUTE"  # "COMPUTE" | "GRAPH"
    entry_point: str = "main"
    code: bytes | str | None = None  # SPIR-V bytes, or GLSL / HLSL source text
    language: str | None = "SPIR-V"  # "SPIR-V" | "GLSL" | "HLSL" | None (no code)


@dataclass(frozen=True)
class Binding:
    binding: int
    mrt_index: int


@dataclass
class DescriptorSet:
    bindings: list[Binding]
    set_index: int | None = None  # None: the position in Segment.set_infos


@dataclass(frozen=True)
class PushConstantRange:
    stage_flags: int
    offset: int
    size: int


@dataclass
class Segment:
    name: str
    module_index: int
    type: str = "COMPUTE"
    set_infos: list[DescriptorSet] = field(default_factory=list)
    inputs: list[Binding] = field(default_factory=list)
    outputs: list[Binding] = field(default_factory=list)
    constants: list[int] = field(default_factory=list)
    dispatch_shape: tuple[int, ...] = ()
    push_constant_ranges: list[PushConstantRange] = field(default_factory=list)
    constant_bindings: list[tuple[int, int]] = field(default_factory=list)  # (graph_constant_id, constant index)

    def set_index(self, position: int) -> int:
        s = self.set_infos[position].set_index
        return position if s is None else s

    def graph_constants(self) -> list[tuple[int, int]]:
        """(graph constant id, constant-section index) of a GRAPH segment: its constant bindings (format 0.5.0), or
        for earlier files the id as the position in `constants`."""
        return list(self.constant_bindings) or list(enumerate(self.constants))


@dataclass
class Resource:
    category: str  # INPUT | OUTPUT | INTERMEDIATE | CONSTANT
    descriptor_type: int | None  # VkDescriptorType value; None for a plain constant
    format: int  # VkFormat value
    shape: tuple[int, ...]
    strides: tuple[int, ...] = ()
    alias_group: int | None = None
    sampler: dict[str, int] | None = None  # SamplerConfig fields


@dataclass
class Constant:
    mrt_index: int
    data: bytes
    sparsity_dim: int = -1


@dataclass
class VGF:
    modules: list[Module] = field(default_factory=list)
    segments: list[Segment] = field(default_factory=list)
    resources: list[Resource] = field(default_factory=list)
    constants: list[Constant] = field(default_factory=list)
    inputs: list[Binding] = field(default_factory=list)  # model-sequence inputs
    outputs: list[Binding] = field(default_factory=list)
    input_names: list[str] = field(default_factory=list)
    output_names: list[str] = field(default_factory=list)
    version: tuple[int, int, int] = VERSION
    vk_header_version: int = 0

    def constant_for(self, mrt_index: int) -> Constant | None:
        return next((c for c in self.constants if c.mrt_index == mrt_index), None)


# ---------------------------------------------------------------------------------------------------------------
# Reading


class _Section:
    """One FlatBuffers section: element counts are bounded by its size and a visit budget."""

    def __init__(self, buf: bytes, name: str, where: str | None):
        self.buf, self.name, self.where = buf, name, where
        self.budget = len(buf) + 1024

    def error(self, rule: str) -> VGFError:
        return VGFError(f"{self.name} section: {rule}", file=self.where)

    def count(self, n: int, elem_size: int, what: str) -> int:
        if n < 0 or n * elem_size > len(self.buf):
            raise self.error(f"{what} claims {n} elements, more than the section's {len(self.buf)} bytes hold")
        self.budget -= n
        if self.budget < 0:
            raise self.error("references more elements than the section holds")
        return n

    def items(self, obj, name: str, elem_size: int = 4) -> list:
        n = self.count(getattr(obj, name + "Length")(), elem_size, _snake(name))
        get = getattr(obj, name)
        return [get(i) for i in range(n)]

    def array(self, obj, name: str, dtype) -> np.ndarray:
        n = self.count(getattr(obj, name + "Length")(), np.dtype(dtype).itemsize, _snake(name))
        return getattr(obj, name + "AsNumpy")() if n else np.zeros(0, dtype)

    def root(self, cls):
        if len(self.buf) < 8:
            raise self.error(f"{len(self.buf)} bytes is too small for a FlatBuffers root table")
        return cls.GetRootAs(self.buf, 0)


def _snake(name: str) -> str:
    return "".join("_" + c.lower() if c.isupper() else c for c in name).lstrip("_")


def _text(value) -> str:
    if value is None:
        return ""
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def _slots(sec: _Section, obj, name: str) -> list[Binding]:
    return [Binding(s.Binding(), s.MrtIndex()) for s in sec.items(obj, name)]


def _read_modules(sec: _Section) -> list[Module]:
    modules = []
    for i, m in enumerate(sec.items(sec.root(fb_modules.ModuleTable), "Modules")):
        kind = m.Type()
        if kind >= len(MODULE_TYPES):
            raise sec.error(f"module {i} has type {kind}, not COMPUTE (0) or GRAPH (1)")
        code_type, table = m.CodeType(), m.Code()
        code: bytes | str | None = None
        language: str | None = None
        if code_type == ModuleCode.SPIRV and table is not None:
            words = fb_spirv.SPIRV()
            words.Init(table.Bytes, table.Pos)
            code = sec.array(words, "Words", np.uint32).astype("<u4").tobytes()
            language = "SPIR-V"
        elif code_type in (ModuleCode.GLSL, ModuleCode.HLSL) and table is not None:
            text = (fb_glsl.GLSL if code_type == ModuleCode.GLSL else fb_hlsl.HLSL)()
            text.Init(table.Bytes, table.Pos)
            code, language = _text(text.Code()), CODE_KINDS[code_type]
        elif code_type not in (ModuleCode.NONE, *CODE_KINDS):
            raise sec.error(f"module {i} has code type {code_type}, not SPIR-V / GLSL / HLSL")
        modules.append(Module(_text(m.Name()), MODULE_TYPES[kind], _text(m.EntryPoint()), code, language))
    return modules


def _read_sequence(sec: _Section, vgf: VGF) -> None:
    root = sec.root(fb_seq.ModelSequenceTable)
    for i, s in enumerate(sec.items(root, "Segments")):
        kind = s.Type()
        if kind >= len(MODULE_TYPES):
            raise sec.error(f"segment {i} has type {kind}, not COMPUTE (0) or GRAPH (1)")
        sets = []
        for d in sec.items(s, "SetInfos"):
            index = d.SetIndex()
            sets.append(DescriptorSet(_slots(sec, d, "Bindings"), None if index == UNSET else index))
        pushes = [PushConstantRange(p.StageFlags(), p.Offset(), p.Size()) for p in sec.items(s, "PushConstantRanges")]
        gcb = [(g.GraphConstantId(), g.ConstantIndex()) for g in sec.items(s, "ConstantBindings")]
        vgf.segments.append(
            Segment(
                _text(s.Name()),
                s.ModuleIndex(),
                MODULE_TYPES[kind],
                sets,
                _slots(sec, s, "Inputs"),
                _slots(sec, s, "Outputs"),
                [int(c) for c in sec.array(s, "Constants", np.uint32)],
                tuple(int(d) for d in sec.array(s, "DispatchShape", np.uint32)),
                pushes,
                gcb,
            )
        )
    vgf.inputs = _slots(sec, root, "Inputs")
    vgf.outputs = _slots(sec, root, "Outputs")
    vgf.input_names = [_text(n) for n in sec.items(root, "InputNames")]
    vgf.output_names = [_text(n) for n in sec.items(root, "OutputNames")]


def _read_resources(sec: _Section) -> list[Resource]:
    out = []
    for i, e in enumerate(sec.items(sec.root(fb_mrt.ModelResourceTable), "MrtEntry")):
        cat = e.Category()
        if cat >= len(CATEGORIES):
            raise sec.error(f"resource {i} has category {cat}, not INPUT / OUTPUT / INTERMEDIATE / CONSTANT")
        desc = e.Description()
        shape = tuple(int(d) for d in sec.array(desc, "Shape", np.int64)) if desc is not None else ()
        strides = tuple(int(d) for d in sec.array(desc, "Strides", np.int64)) if desc is not None else ()
        sampler = None
        if e.ExtraConfigType() == ExtraConfig.SamplerConfig and e.ExtraConfig() is not None:
            t = fb_sampler.SamplerConfig()
            t.Init(e.ExtraConfig().Bytes, e.ExtraConfig().Pos)
            sampler = {
                "min_filter": t.MinFilter(),
                "mag_filter": t.MagFilter(),
                "address_mode_u": t.AddressModeU(),
                "address_mode_v": t.AddressModeV(),
                "border_color": t.BorderColor(),
            }
        dtype = e.VkDescriptorType()
        alias = e.AliasGroupId()
        out.append(
            Resource(
                CATEGORIES[cat],
                None if dtype == UNSET else dtype,
                e.VkFormat(),
                shape,
                strides,
                None if alias == UNSET else alias,
                sampler,
            )
        )
    return out


def _read_constants(buf: bytes, where: str | None) -> list[Constant]:
    if not buf:
        return []

    def error(rule):
        return VGFError(f"constant section: {rule}", file=where)

    if len(buf) < 16:
        raise error(f"{len(buf)} bytes is too small for its 16-byte preamble")
    if buf[:8] != CONST_MAGIC:
        raise error(f"starts with {bytes(buf[:8])!r}, expected {CONST_MAGIC!r}")
    count = struct.unpack_from("<Q", buf, 8)[0]
    payload = 16 + count * CONST_ENTRY.size
    if payload > len(buf):
        raise error(f"claims {count} constants, more than its {len(buf)} bytes hold")
    out = []
    ranges = []
    for i in range(count):
        mrt, sparsity, size, offset = CONST_ENTRY.unpack_from(buf, 16 + i * CONST_ENTRY.size)
        if offset + size > len(buf) - payload:
            raise error(f"constant {i} ({size} bytes at payload offset {offset}) runs past the section end")
        out.append(Constant(mrt, bytes(buf[payload + offset : payload + offset + size]), sparsity))
        ranges.append((offset, offset + size, i))
    ranges.sort()
    for (_, end, i), (start, _, j) in zip(ranges, ranges[1:]):
        if start < end:  # one byte, two values: a damaged offset, never what a writer does
            raise error(f"constants {min(i, j)} and {max(i, j)} overlap in the payload (at byte {start})")
    return out


def _check(vgf: VGF, where: str | None) -> None:
    """Cross references: every index names something that exists."""

    def error(section, rule):
        return VGFError(f"{section} section: {rule}", file=where)

    n_mrt = len(vgf.resources)

    def slot(section, what, b: Binding):
        if b.mrt_index >= n_mrt:
            raise error(
                section,
                f"{what} binding {b.binding} names resource {b.mrt_index}, but the resource table has {n_mrt} entries",
            )

    for i, s in enumerate(vgf.segments):
        what = f"segment {i} '{s.name}'"
        if s.module_index >= len(vgf.modules):
            raise error(
                "model-sequence", f"{what} names module {s.module_index}, but there are {len(vgf.modules)} modules"
            )
        if vgf.modules[s.module_index].type != s.type:
            raise error(
                "model-sequence",
                f"{what} is {s.type} but module {s.module_index} is {vgf.modules[s.module_index].type}",
            )
        for b in [*(b for d in s.set_infos for b in d.bindings), *s.inputs, *s.outputs]:
            slot("model-sequence", what, b)
        if s.dispatch_shape and len(s.dispatch_shape) != 3:
            raise error("model-sequence", f"{what} has a dispatch shape of {len(s.dispatch_shape)} values, not 3")
        for c in s.constants:
            if c >= len(vgf.constants):
                raise error("model-sequence", f"{what} names constant {c}, but there are {len(vgf.constants)}")
    for what, slots, names in (("input", vgf.inputs, vgf.input_names), ("output", vgf.outputs, vgf.output_names)):
        for b in slots:
            slot("model-sequence", f"model {what}", b)
        if names and len(names) != len(slots):
            raise error("model-sequence", f"{len(names)} {what} names for {len(slots)} {what}s")
    for i, const in enumerate(vgf.constants):
        if const.mrt_index >= n_mrt:
            raise error(
                "constant", f"constant {i} names resource {const.mrt_index}, but the resource table has {n_mrt} entries"
            )
        if vgf.resources[const.mrt_index].category != "CONSTANT":
            raise error(
                "constant",
                f"constant {i} names resource {const.mrt_index}, which is "
                f"{vgf.resources[const.mrt_index].category}, not CONSTANT",
            )


def read_vgf(source: bytes | bytearray | memoryview | str | Path, file: str | None = None) -> VGF:
    """Decodes a VGF file (path or bytes). Any defect raises VGFError naming the file and the section / rule."""
    if isinstance(source, (str, Path)):
        file = file or str(source)
        try:
            buf = Path(source).read_bytes()
        except OSError as err:
            raise VGFError(f"cannot read: {err.strerror}", file=file) from None
    else:
        buf = bytes(source)
    if not buf:
        raise VGFError("empty file, expected a VGF container", file=file)
    if buf[:4] != MAGIC[: len(buf[:4])] or len(buf) < 4:
        raise VGFError(f"not a VGF file (magic {bytes(buf[:4])!r}, expected {MAGIC!r})", file=file)
    if len(buf) < HEADER_SIZE:
        raise VGFError(f"truncated: {len(buf)} bytes is too short for the {HEADER_SIZE}-byte VGF header", file=file)
    (vk_header,) = struct.unpack_from("<H", buf, 4)
    version = (buf[8], buf[9], buf[10])
    if version[0] != VERSION[0] or version[1] > VERSION[1]:
        raise VGFError(
            f"VGF format {'.'.join(map(str, version))} is newer than this reader supports "
            f"({VERSION[0]}.{VERSION[1]}.x and older)",
            file=file,
        )
    sections = []
    for i, name in enumerate(SECTIONS):
        offset, size = struct.unpack_from("<QQ", buf, 16 + 16 * i)
        if size and (offset < HEADER_SIZE or offset + size > len(buf)):
            raise VGFError(
                f"header: the {name} section ({size} bytes at offset {offset}) lies outside the "
                f"file's {len(buf)} bytes{' (truncated?)' if offset + size > len(buf) else ''}",
                file=file,
            )
        if size and offset % 8:
            raise VGFError(f"header: the {name} section offset {offset} is not 8-byte aligned", file=file)
        sections.append(buf[offset : offset + size])
    vgf = VGF(version=version, vk_header_version=vk_header)
    current = SECTIONS[0]
    try:
        vgf.modules = _read_modules(_Section(sections[0], current, file))
        current = SECTIONS[1]
        _read_sequence(_Section(sections[1], current, file), vgf)
        current = SECTIONS[2]
        vgf.resources = _read_resources(_Section(sections[2], current, file))
    except VGFError:
        raise
    except (
        struct.error,
        IndexError,
        ValueError,
        TypeError,
        OverflowError,
        UnicodeDecodeError,
        AttributeError,
        MemoryError,
        RecursionError,
    ) as err:
        raise VGFError(
            f"{current} section: corrupt FlatBuffers data ({type(err).__name__}: {err})", file=file
        ) from None
    vgf.constants = _read_constants(sections[3], file)
    _check(vgf, file)
    return vgf


def load_vgf(path: str | Path) -> VGF:
    return read_vgf(path)


# ---------------------------------------------------------------------------------------------------------------
# Writing


def _slot_vector(b: flatbuffers.Builder, slots: list[Binding], start) -> int:
    offs = []
    for s in slots:
        fb_slot.Start(b)
        fb_slot.AddBinding(b, s.binding)
        fb_slot.AddMrtIndex(b, s.mrt_index)
        offs.append(fb_slot.End(b))
    return _tables(b, offs, start)


def _tables(b: flatbuffers.Builder, offs: list[int], start) -> int:
    start(b, len(offs))
    for o in reversed(offs):
        b.PrependUOffsetTRelative(o)
    return b.EndVector()


def _strings(b: flatbuffers.Builder, items: list[str], start) -> int:
    return _tables(b, [b.CreateString(s) for s in items], start)


def _finish(b: flatbuffers.Builder, root: int) -> bytes:
    b.Finish(root)
    return bytes(b.Output())


def _write_modules(modules: list[Module]) -> bytes:
    b = flatbuffers.Builder(1024)
    offs = []
    for m in modules:
        code, code_type = None, ModuleCode.NONE
        if m.code is not None:
            if m.language == "SPIR-V":
                if isinstance(m.code, str):
                    raise ValueError(f"module '{m.name}': SPIR-V code must be bytes, not text")
                data = bytes(m.code)
                if len(data) % 4:
                    raise ValueError(f"module '{m.name}': SPIR-V is {len(data)} bytes, not a multiple of 4")
                words = b.CreateNumpyVector(np.frombuffer(data, "<u4"))
                fb_spirv.Start(b)
                fb_spirv.AddWords(b, words)
                code, code_type = fb_spirv.End(b), ModuleCode.SPIRV
            else:
                text = b.CreateString(m.code)
                mod = fb_glsl if m.language == "GLSL" else fb_hlsl
                mod.Start(b)
                mod.AddCode(b, text)
                code, code_type = mod.End(b), ModuleCode.GLSL if m.language == "GLSL" else ModuleCode.HLSL
        name, entry = b.CreateString(m.name), b.CreateString(m.entry_point)
        fb_module.Start(b)
        fb_module.AddType(b, MODULE_TYPES.index(m.type))
        fb_module.AddName(b, name)
        fb_module.AddEntryPoint(b, entry)
        if code is not None:
            fb_module.AddCodeType(b, code_type)
            fb_module.AddCode(b, code)
        offs.append(fb_module.End(b))
    vec = _tables(b, offs, fb_modules.StartModulesVector)
    fb_modules.Start(b)
    fb_modules.AddModules(b, vec)
    return _finish(b, fb_modules.End(b))


def _write_sequence(vgf: VGF) -> bytes:
    b = flatbuffers.Builder(1024)
    segs = []
    for s in vgf.segments:
        sets = []
        for d in s.set_infos:
            slots = _slot_vector(b, d.bindings, fb_set.StartBindingsVector)
            fb_set.Start(b)
            fb_set.AddBindings(b, slots)
            if d.set_index is not None:
                fb_set.AddSetIndex(b, d.set_index)
            sets.append(fb_set.End(b))
        set_vec = _tables(b, sets, fb_segment.StartSetInfosVector)
        ins = _slot_vector(b, s.inputs, fb_segment.StartInputsVector)
        outs = _slot_vector(b, s.outputs, fb_segment.StartOutputsVector)
        consts = b.CreateNumpyVector(np.asarray(s.constants, np.uint32))
        shape = b.CreateNumpyVector(np.asarray(s.dispatch_shape, np.uint32))
        pushes = []
        for p in s.push_constant_ranges:
            fb_push.Start(b)
            fb_push.AddStageFlags(b, p.stage_flags)
            fb_push.AddOffset(b, p.offset)
            fb_push.AddSize(b, p.size)
            pushes.append(fb_push.End(b))
        push_vec = _tables(b, pushes, fb_segment.StartPushConstantRangesVector)
        gcbs = []
        for gid, cidx in s.constant_bindings:
            fb_gcb.Start(b)
            fb_gcb.AddGraphConstantId(b, gid)
            fb_gcb.AddConstantIndex(b, cidx)
            gcbs.append(fb_gcb.End(b))
        gcb_vec = _tables(b, gcbs, fb_segment.StartConstantBindingsVector)
        name = b.CreateString(s.name)
        fb_segment.Start(b)
        fb_segment.AddType(b, MODULE_TYPES.index(s.type))
        fb_segment.AddName(b, name)
        fb_segment.AddModuleIndex(b, s.module_index)
        fb_segment.AddSetInfos(b, set_vec)
        fb_segment.AddInputs(b, ins)
        fb_segment.AddOutputs(b, outs)
        fb_segment.AddConstants(b, consts)
        fb_segment.AddDispatchShape(b, shape)
        fb_segment.AddPushConstantRanges(b, push_vec)
        fb_segment.AddConstantBindings(b, gcb_vec)
        segs.append(fb_segment.End(b))
    seg_vec = _tables(b, segs, fb_seq.StartSegmentsVector)
    ins = _slot_vector(b, vgf.inputs, fb_seq.StartInputsVector)
    outs = _slot_vector(b, vgf.outputs, fb_seq.StartOutputsVector)
    in_names = _strings(b, vgf.input_names, fb_seq.StartInputNamesVector)
    out_names = _strings(b, vgf.output_names, fb_seq.StartOutputNamesVector)
    fb_seq.Start(b)
    fb_seq.AddSegments(b, seg_vec)
    fb_seq.AddInputs(b, ins)
    fb_seq.AddOutputs(b, outs)
    fb_seq.AddInputNames(b, in_names)
    fb_seq.AddOutputNames(b, out_names)
    return _finish(b, fb_seq.End(b))


def _write_resources(resources: list[Resource]) -> bytes:
    b = flatbuffers.Builder(1024)
    offs = []
    for r in resources:
        shape = b.CreateNumpyVector(np.asarray(r.shape, np.int64))
        strides = b.CreateNumpyVector(np.asarray(r.strides, np.int64))
        fb_desc.Start(b)
        fb_desc.AddShape(b, shape)
        fb_desc.AddStrides(b, strides)
        desc = fb_desc.End(b)
        sampler = None
        if r.sampler is not None:
            fb_sampler.Start(b)
            fb_sampler.AddMinFilter(b, r.sampler.get("min_filter", 0))
            fb_sampler.AddMagFilter(b, r.sampler.get("mag_filter", 0))
            fb_sampler.AddAddressModeU(b, r.sampler.get("address_mode_u", 0))
            fb_sampler.AddAddressModeV(b, r.sampler.get("address_mode_v", 0))
            fb_sampler.AddBorderColor(b, r.sampler.get("border_color", 0))
            sampler = fb_sampler.End(b)
        fb_entry.Start(b)
        b.ForceDefaults(True)  # descriptor type / format / category are always written, even when 0
        fb_entry.AddVkDescriptorType(b, UNSET if r.descriptor_type is None else r.descriptor_type)
        fb_entry.AddVkFormat(b, r.format)
        fb_entry.AddCategory(b, CATEGORIES.index(r.category))
        b.ForceDefaults(False)
        fb_entry.AddDescription(b, desc)
        if sampler is not None:
            fb_entry.AddExtraConfigType(b, ExtraConfig.SamplerConfig)
            fb_entry.AddExtraConfig(b, sampler)
        if r.alias_group is not None:
            fb_entry.AddAliasGroupId(b, r.alias_group)
        offs.append(fb_entry.End(b))
    vec = _tables(b, offs, fb_mrt.StartMrtEntryVector)
    fb_mrt.Start(b)
    fb_mrt.AddMrtEntry(b, vec)
    return _finish(b, fb_mrt.End(b))


def _pad8(n: int) -> int:
    return -n % 8


def _write_constants(constants: list[Constant]) -> bytes:
    table, payload = [], bytearray()
    for c in constants:
        table.append(CONST_ENTRY.pack(c.mrt_index, c.sparsity_dim, len(c.data), len(payload)))
        payload += c.data + b"\0" * _pad8(len(c.data))
    return CONST_MAGIC + struct.pack("<Q", len(constants)) + b"".join(table) + bytes(payload)


def write_vgf(vgf: VGF) -> bytes:
    """Encodes a VGF container (format 0.5.0 unless vgf.version says otherwise)."""
    _check(vgf, None)
    sections = [
        _write_modules(vgf.modules),
        _write_sequence(vgf),
        _write_resources(vgf.resources),
        _write_constants(vgf.constants),
    ]
    header = bytearray(HEADER_SIZE)
    header[0:4] = MAGIC
    struct.pack_into("<H", header, 4, vgf.vk_header_version)
    header[8:11] = bytes(vgf.version)
    out = bytearray(header)
    for i, data in enumerate(sections):
        out += b"\0" * _pad8(len(out))
        struct.pack_into("<QQ", out, 16 + 16 * i, len(out), len(data))
        out += data
    return bytes(out)


def save_vgf(vgf: VGF, path: str | Path) -> int:
    """Writes the container to `path`; returns its size in bytes."""
    data = write_vgf(vgf)
    Path(path).write_bytes(data)
    return len(data)
