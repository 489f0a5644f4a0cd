"""Images for custom-op bindings (STORAGE_IMAGE / COMBINED_IMAGE_SAMPLER): a VkImage, its view and, for a sampled
image, its sampler, created when a segment is recorded.

The arena stays the only source of truth: the recorder copies a tensor's bytes into the image before the dispatch
(vkCmdCopyBufferToImage) and, for a storage image the kernel writes, back into the arena after it
(vkCmdCopyImageToBuffer). Layouts: TRANSFER_DST_OPTIMAL for the copy in, then SHADER_READ_ONLY_OPTIMAL (sampled)
or GENERAL (storage) for the dispatch, TRANSFER_SRC_OPTIMAL for the copy out; each run starts from UNDEFINED (the
contents are rewritten). Format features are checked on the device first.
"""

from __future__ import annotations

from ..program import Image
from .device import Device, VulkanError
from .loader import api

vk = api()  # the `vulkan` package; a VulkanError with the fix where there is no loader

_FEATURES = {
    "VK_DESCRIPTOR_TYPE_STORAGE_IMAGE": (vk.VK_FORMAT_FEATURE_STORAGE_IMAGE_BIT, "storage images"),
    "VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER": (vk.VK_FORMAT_FEATURE_SAMPLED_IMAGE_BIT, "sampled images"),
}
_COPY = 0x4000 | 0x8000  # VK_FORMAT_FEATURE_TRANSFER_SRC_BIT | _DST_BIT (Vulkan 1.1; the binding lacks them)
_LINEAR = vk.VK_FORMAT_FEATURE_SAMPLED_IMAGE_FILTER_LINEAR_BIT
COLOR = vk.VkImageSubresourceRange(
    aspectMask=vk.VK_IMAGE_ASPECT_COLOR_BIT, baseMipLevel=0, levelCount=1, baseArrayLayer=0, layerCount=1
)
LAYERS = vk.VkImageSubresourceLayers(
    aspectMask=vk.VK_IMAGE_ASPECT_COLOR_BIT, mipLevel=0, baseArrayLayer=0, layerCount=1
)


def _enum(name: str, what: str, op: str) -> int:
    value = getattr(vk, name, None) if isinstance(name, str) and name.startswith("VK_") else None
    if not isinstance(value, int):
        raise VulkanError(f"{op}: {what} {name!r} is not a Vulkan enum name")
    return value


class ImageResource:
    """One image binding of one dispatch."""

    def __init__(self, device: Device, spec: Image, descriptor: str, op: str):
        self.device, self.spec, self.descriptor = device, spec, descriptor
        self.image = self.memory = self.view = self.sampler = None
        self.label = op  # its name for GPU tools (tosa_vk/vulkan/labels.py)
        vkd = device.device
        fmt = _enum(spec.format, "format", op)
        need, what = _FEATURES[descriptor]
        have = vk.vkGetPhysicalDeviceFormatProperties(device.physical, fmt).optimalTilingFeatures
        if have & (need | _COPY) != need | _COPY:
            raise VulkanError(f"{op}: {device.info.name} does not support {spec.format} for {what} (with transfers)")
        sampler = dict(spec.sampler)
        linear = "VK_FILTER_LINEAR" in (sampler.get("min_filter"), sampler.get("mag_filter"))
        if descriptor.endswith("COMBINED_IMAGE_SAMPLER") and linear and not have & _LINEAR:
            raise VulkanError(f"{op}: {device.info.name} cannot filter {spec.format} linearly; use VK_FILTER_NEAREST")
        usage = (
            vk.VK_IMAGE_USAGE_TRANSFER_DST_BIT
            | vk.VK_IMAGE_USAGE_TRANSFER_SRC_BIT
            | (vk.VK_IMAGE_USAGE_STORAGE_BIT if descriptor.endswith("STORAGE_IMAGE") else vk.VK_IMAGE_USAGE_SAMPLED_BIT)
        )
        try:
            self.image = vk.vkCreateImage(
                vkd,
                vk.VkImageCreateInfo(
                    sType=vk.VK_STRUCTURE_TYPE_IMAGE_CREATE_INFO,
                    imageType=vk.VK_IMAGE_TYPE_2D,
                    format=fmt,
                    extent=vk.VkExtent3D(spec.width, spec.height, 1),
                    mipLevels=1,
                    arrayLayers=1,
                    samples=vk.VK_SAMPLE_COUNT_1_BIT,
                    tiling=vk.VK_IMAGE_TILING_OPTIMAL,
                    usage=usage,
                    sharingMode=vk.VK_SHARING_MODE_EXCLUSIVE,
                    initialLayout=vk.VK_IMAGE_LAYOUT_UNDEFINED,
                ),
                None,
            )
            req = vk.vkGetImageMemoryRequirements(vkd, self.image)
            props = vk.vkGetPhysicalDeviceMemoryProperties(device.physical)
            types = [i for i in range(props.memoryTypeCount) if req.memoryTypeBits & (1 << i)]
            local = [i for i in types if props.memoryTypes[i].propertyFlags & vk.VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT]
            self.memory = vk.vkAllocateMemory(
                vkd,
                vk.VkMemoryAllocateInfo(
                    sType=vk.VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                    allocationSize=req.size,
                    memoryTypeIndex=(local or types)[0],
                ),
                None,
            )
            vk.vkBindImageMemory(vkd, self.image, self.memory, 0)
            self.view = vk.vkCreateImageView(
                vkd,
                vk.VkImageViewCreateInfo(
                    sType=vk.VK_STRUCTURE_TYPE_IMAGE_VIEW_CREATE_INFO,
                    image=self.image,
                    viewType=vk.VK_IMAGE_VIEW_TYPE_2D,
                    format=fmt,
                    subresourceRange=COLOR,
                ),
                None,
            )
            if descriptor.endswith("COMBINED_IMAGE_SAMPLER"):
                self.sampler = vk.vkCreateSampler(
                    vkd,
                    vk.VkSamplerCreateInfo(
                        sType=vk.VK_STRUCTURE_TYPE_SAMPLER_CREATE_INFO,
                        magFilter=_enum(sampler.get("mag_filter", "VK_FILTER_LINEAR"), "mag_filter", op),
                        minFilter=_enum(sampler.get("min_filter", "VK_FILTER_LINEAR"), "min_filter", op),
                        mipmapMode=vk.VK_SAMPLER_MIPMAP_MODE_NEAREST,
                        addressModeU=_enum(
                            sampler.get("address_mode_u", "VK_SAMPLER_ADDRESS_MODE_CLAMP_TO_EDGE"), "address_mode_u", op
                        ),
                        addressModeV=_enum(
                            sampler.get("address_mode_v", "VK_SAMPLER_ADDRESS_MODE_CLAMP_TO_EDGE"), "address_mode_v", op
                        ),
                        addressModeW=vk.VK_SAMPLER_ADDRESS_MODE_CLAMP_TO_EDGE,
                        mipLodBias=0.0,
                        anisotropyEnable=vk.VK_FALSE,
                        maxAnisotropy=1.0,
                        compareEnable=vk.VK_FALSE,
                        compareOp=vk.VK_COMPARE_OP_ALWAYS,
                        minLod=0.0,
                        maxLod=0.0,
                        borderColor=_enum(
                            sampler.get("border_color", "VK_BORDER_COLOR_FLOAT_TRANSPARENT_BLACK"), "border_color", op
                        ),
                        unnormalizedCoordinates=vk.VK_FALSE,
                    ),
                    None,
                )
        except BaseException:
            self.close()
            raise

    @property
    def layout(self) -> int:
        """The layout the dispatch sees the image in."""
        return vk.VK_IMAGE_LAYOUT_GENERAL if self.sampler is None else vk.VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL

    def descriptor_info(self):
        return vk.VkDescriptorImageInfo(sampler=self.sampler, imageView=self.view, imageLayout=self.layout)

    def region(self, offset: int):
        """The copy between the arena at `offset` (tightly packed texels) and the whole image."""
        return vk.VkBufferImageCopy(
            bufferOffset=offset,
            bufferRowLength=0,
            bufferImageHeight=0,
            imageSubresource=LAYERS,
            imageOffset=vk.VkOffset3D(0, 0, 0),
            imageExtent=vk.VkExtent3D(self.spec.width, self.spec.height, 1),
        )

    def barrier(self, src_access: int, dst_access: int, old_layout: int, new_layout: int):
        return vk.VkImageMemoryBarrier(
            sType=vk.VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER,
            srcAccessMask=src_access,
            dstAccessMask=dst_access,
            oldLayout=old_layout,
            newLayout=new_layout,
            srcQueueFamilyIndex=vk.VK_QUEUE_FAMILY_IGNORED,
            dstQueueFamilyIndex=vk.VK_QUEUE_FAMILY_IGNORED,
            image=self.image,
            subresourceRange=COLOR,
        )

    def close(self) -> None:
        vkd = self.device.device
        if self.sampler is not None:
            vk.vkDestroySampler(vkd, self.sampler, None)
        if self.view is not None:
            vk.vkDestroyImageView(vkd, self.view, None)
        if self.image is not None:
            vk.vkDestroyImage(vkd, self.image, None)
        if self.memory is not None:
            vk.vkFreeMemory(vkd, self.memory, None)
        self.image = self.memory = self.view = self.sampler = None
