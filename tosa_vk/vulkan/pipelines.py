"""Compute pipelines keyed by (SPIR-V, descriptor layout, push-constant size, entry point), with a driver-level
VkPipelineCache.

Built-in tosa_vk shaders bind their tensors as storage buffers at set 0, bindings 0..n-1, and take at most one
push-constant block. Custom-op kernels give a (set, binding) and a descriptor type per binding: one descriptor-set
layout per set index up to the highest used (unused sets get an empty layout). VK_DESCRIPTOR_TYPE_TENSOR_ARM is
bound as a storage buffer (lavapipe has no VK_ARM_tensors).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from vgf import vk_enums

from .device import Device
from .loader import api

vk = api()  # the `vulkan` package; a VulkanError with the fix where there is no loader

# how each descriptor type a kernel names is bound here; TENSOR_ARM as a storage buffer
BOUND_AS = {vk_enums.TENSOR_ARM: vk_enums.STORAGE_BUFFER}

Layout = tuple[tuple[int, int, int], ...]  # (set, binding, VkDescriptorType) per binding


def bound_descriptors(count: int, slots: tuple = (), descriptors: tuple = ()) -> dict[tuple[int, int], str]:
    """(set, binding) -> the VK_DESCRIPTOR_TYPE_* name bound there (defaults: storage buffers at set 0, bindings
    0..count-1)."""
    slots = slots or tuple((0, i) for i in range(count))
    names = descriptors or (vk_enums.STORAGE_BUFFER,) * count
    return {slot: BOUND_AS.get(name, name) for slot, name in zip(slots, names)}


def descriptor_layout(count: int, slots: tuple = (), descriptors: tuple = ()) -> Layout:
    """The layout of a kernel's bindings."""
    bound = bound_descriptors(count, slots, descriptors)
    return tuple((s, b, vk_enums.DESCRIPTOR_TYPES[name]) for (s, b), name in bound.items())


def kernel_layout(kernel) -> Layout:
    """The descriptor layout of a program.Kernel."""
    return descriptor_layout(len(kernel.bindings), kernel.slots, kernel.descriptors)


@dataclass
class Pipeline:
    pipeline: object
    layout: object
    set_layout: object  # set 0's layout
    bindings: int
    push_size: int
    set_layouts: list[object] = field(default_factory=list)  # one per set index 0..max used
    descriptor_layout: Layout = ()
    module: object = None  # the VkShaderModule


def _key(spirv: bytes, bindings: int, push_size: int, layout: Layout | None, entry: str) -> tuple[tuple, tuple]:
    """(what tells pipelines apart, _create's arguments) for get()'s arguments."""
    layout = layout or descriptor_layout(bindings)
    return (hashlib.sha256(spirv).digest(), layout, push_size, entry), (spirv, layout, push_size, entry)


class Pipelines:
    """`initial_data`: a VkPipelineCache's data from an earlier process (the program cache keeps it); the driver
    checks its header and ignores data of another device or driver."""

    def __init__(self, device: Device, initial_data: bytes = b""):
        self.device = device
        info = vk.VkPipelineCacheCreateInfo(sType=vk.VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO)
        if initial_data:
            info = vk.VkPipelineCacheCreateInfo(
                sType=vk.VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO,
                initialDataSize=len(initial_data),
                pInitialData=vk.ffi.from_buffer(initial_data),
            )
        self._cache = vk.vkCreatePipelineCache(device.device, info, None)
        device.name(vk.VK_OBJECT_TYPE_PIPELINE_CACHE, self._cache, "tosa_vk pipeline cache")
        self._pipelines: dict[tuple, Pipeline] = {}
        self._modules: list = []

    def get(
        self, spirv: bytes, bindings: int, push_size: int, layout: Layout | None = None, entry: str = "main"
    ) -> Pipeline:
        key, args = _key(spirv, bindings, push_size, layout, entry)
        found = self._pipelines.get(key)
        if found is None:
            found = self._pipelines[key] = self._create(*args)
        return found

    def prepare(self, requests: list[tuple[bytes, int, int, Layout, str]]) -> Callable[[], None]:
        """Starts creating the pipelines of `requests` (get()'s arguments) that do not exist yet, on one thread per
        core, and returns `wait`, which the caller must call (also on its error path) before it uses or closes
        these pipelines: the caller's other work overlaps the driver's (Runtime uploads the constants meanwhile).
        Drivers compile at creation (lavapipe: 2-200 ms a kernel, then LLVM code generation at the first dispatch
        unless Mesa's disk cache has it; mobilenetv2's 20 pipelines 0.78 -> 0.55 s with 2 threads), and the vulkan
        module's calls release the GIL. A pipeline that fails here is left for get(), which reports it with its
        operator."""
        todo = dict(_key(*request) for request in requests)
        todo = {key: args for key, args in todo.items() if key not in self._pipelines}
        if len(todo) < 2:
            return lambda: None

        def create(key):
            try:
                return key, self._create(*todo[key])
            except vk.VkError:
                return key, None

        pool = ThreadPoolExecutor(max_workers=min(len(todo), os.cpu_count() or 1))
        futures = [pool.submit(create, key) for key in todo]
        pool.shutdown(wait=False)  # the threads end with the work

        def wait() -> None:
            for future in futures:  # in request order: the same pipelines whatever the threads' timing
                key, made = future.result()
                if made is not None:
                    self._pipelines[key] = made

        return wait

    def _create(self, spirv: bytes, layout_spec: Layout, push_size: int, entry: str) -> Pipeline:
        vkd = self.device.device
        module = vk.vkCreateShaderModule(
            vkd,
            vk.VkShaderModuleCreateInfo(
                sType=vk.VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO, codeSize=len(spirv), pCode=spirv
            ),
            None,
        )
        self._modules.append(module)
        n_sets = 1 + max((s for s, _, _ in layout_spec), default=0)
        set_layouts = []
        for set_index in range(n_sets):
            entries = sorted((b, t) for s, b, t in layout_spec if s == set_index)
            set_layouts.append(
                vk.vkCreateDescriptorSetLayout(
                    vkd,
                    vk.VkDescriptorSetLayoutCreateInfo(
                        sType=vk.VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
                        bindingCount=len(entries),
                        pBindings=[
                            vk.VkDescriptorSetLayoutBinding(
                                binding=b,
                                descriptorType=t,
                                descriptorCount=1,
                                stageFlags=vk.VK_SHADER_STAGE_COMPUTE_BIT,
                            )
                            for b, t in entries
                        ]
                        or None,
                    ),
                    None,
                )
            )
        ranges = [vk.VkPushConstantRange(stageFlags=vk.VK_SHADER_STAGE_COMPUTE_BIT, offset=0, size=push_size)]
        layout = vk.vkCreatePipelineLayout(
            vkd,
            vk.VkPipelineLayoutCreateInfo(
                sType=vk.VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
                setLayoutCount=n_sets,
                pSetLayouts=set_layouts,
                pushConstantRangeCount=1 if push_size else 0,
                pPushConstantRanges=ranges if push_size else None,
            ),
            None,
        )
        stage = vk.VkPipelineShaderStageCreateInfo(
            sType=vk.VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
            stage=vk.VK_SHADER_STAGE_COMPUTE_BIT,
            module=module,
            pName=entry,
        )
        pipeline = vk.vkCreateComputePipelines(
            vkd,
            self._cache,
            1,
            [
                vk.VkComputePipelineCreateInfo(
                    sType=vk.VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO, stage=stage, layout=layout
                )
            ],
            None,
        )[0]
        return Pipeline(pipeline, layout, set_layouts[0], len(layout_spec), push_size, set_layouts, layout_spec, module)

    def name(self, pipeline: Pipeline, text: str) -> None:
        """Names a pipeline, its layouts and shader module for GPU tools (tosa_vk/vulkan/labels.py)."""
        name = self.device.name
        name(vk.VK_OBJECT_TYPE_PIPELINE, pipeline.pipeline, text)
        name(vk.VK_OBJECT_TYPE_PIPELINE_LAYOUT, pipeline.layout, text)
        name(vk.VK_OBJECT_TYPE_SHADER_MODULE, pipeline.module, text)
        for index, set_layout in enumerate(pipeline.set_layouts):
            name(vk.VK_OBJECT_TYPE_DESCRIPTOR_SET_LAYOUT, set_layout, f"{text}: set {index}")

    def data(self) -> bytes:
        """The driver's pipeline-cache data (vkGetPipelineCacheData, not wrapped by the vulkan module: its C call);
        a 32-byte header only on lavapipe, whose pipelines are warmed by Mesa's disk cache instead."""
        size = vk.ffi.new("size_t *")
        lib, vkd = vk.lib, self.device.device
        if lib.vkGetPipelineCacheData(vkd, self._cache, size, vk.ffi.NULL) != vk.VK_SUCCESS:
            return b""
        buf = vk.ffi.new("char[]", size[0])
        if lib.vkGetPipelineCacheData(vkd, self._cache, size, buf) != vk.VK_SUCCESS:
            return b""
        return bytes(vk.ffi.buffer(buf, size[0]))

    def close(self) -> None:
        vkd = self.device.device
        for p in self._pipelines.values():
            vk.vkDestroyPipeline(vkd, p.pipeline, None)
            vk.vkDestroyPipelineLayout(vkd, p.layout, None)
            for set_layout in p.set_layouts:
                vk.vkDestroyDescriptorSetLayout(vkd, set_layout, None)
        for m in self._modules:
            vk.vkDestroyShaderModule(vkd, m, None)
        vk.vkDestroyPipelineCache(vkd, self._cache, None)
        self._pipelines.clear()
        self._modules.clear()
