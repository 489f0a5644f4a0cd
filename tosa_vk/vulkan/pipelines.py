"""Compute pipelines keyed by (SPIR-V, binding count, push-constant size), with a driver-level VkPipelineCache.

Every tosa_vk shader binds its tensors as storage buffers at set 0, bindings 0..n-1, and takes at most one
push-constant block.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass

import vulkan as vk

from .device import Device


@dataclass
class Pipeline:
    pipeline: object
    layout: object
    set_layout: object
    bindings: int
    push_size: int


class Pipelines:
    def __init__(self, device: Device):
        self.device = device
        self._cache = vk.vkCreatePipelineCache(device.device, vk.VkPipelineCacheCreateInfo(
            sType=vk.VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO), None)
        self._pipelines: dict[tuple, Pipeline] = {}
        self._modules: list = []

    def get(self, spirv: bytes, bindings: int, push_size: int) -> Pipeline:
        key = (hashlib.sha256(spirv).digest(), bindings, push_size)
        found = self._pipelines.get(key)
        if found is None:
            found = self._pipelines[key] = self._create(spirv, bindings, push_size)
        return found

    def _create(self, spirv: bytes, bindings: int, push_size: int) -> Pipeline:
        vkd = self.device.device
        module = vk.vkCreateShaderModule(vkd, vk.VkShaderModuleCreateInfo(
            sType=vk.VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO, codeSize=len(spirv), pCode=spirv), None)
        self._modules.append(module)
        set_layout = vk.vkCreateDescriptorSetLayout(vkd, vk.VkDescriptorSetLayoutCreateInfo(
            sType=vk.VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO, bindingCount=bindings,
            pBindings=[vk.VkDescriptorSetLayoutBinding(
                binding=i, descriptorType=vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, descriptorCount=1,
                stageFlags=vk.VK_SHADER_STAGE_COMPUTE_BIT) for i in range(bindings)] or None), None)
        ranges = [vk.VkPushConstantRange(stageFlags=vk.VK_SHADER_STAGE_COMPUTE_BIT, offset=0, size=push_size)]
        layout = vk.vkCreatePipelineLayout(vkd, vk.VkPipelineLayoutCreateInfo(
            sType=vk.VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO, setLayoutCount=1, pSetLayouts=[set_layout],
            pushConstantRangeCount=1 if push_size else 0, pPushConstantRanges=ranges if push_size else None), None)
        stage = vk.VkPipelineShaderStageCreateInfo(sType=vk.VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                                                   stage=vk.VK_SHADER_STAGE_COMPUTE_BIT, module=module,
                                                   pName="main")
        pipeline = vk.vkCreateComputePipelines(vkd, self._cache, 1, [vk.VkComputePipelineCreateInfo(
            sType=vk.VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO, stage=stage, layout=layout)], None)[0]
        return Pipeline(pipeline, layout, set_layout, bindings, push_size)

    def close(self) -> None:
        vkd = self.device.device
        for p in self._pipelines.values():
            vk.vkDestroyPipeline(vkd, p.pipeline, None)
            vk.vkDestroyPipelineLayout(vkd, p.layout, None)
            vk.vkDestroyDescriptorSetLayout(vkd, p.set_layout, None)
        for m in self._modules:
            vk.vkDestroyShaderModule(vkd, m, None)
        vk.vkDestroyPipelineCache(vkd, self._cache, None)
        self._pipelines.clear()
        self._modules.clear()
