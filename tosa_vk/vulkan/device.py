"""Vulkan instance, physical-device selection and capability query, logical device with a compute queue.

Device selection: an index, a UUID (or a unique prefix of 8 hex digits or more) or a name substring, else the
TOSA_VK_DEVICE environment variable, else the first device (discrete GPUs before integrated before CPU
implementations such as lavapipe). TOSA_VK_VISIBLE_DEVICES (indices or UUIDs, comma-separated) restricts the devices
this process sees and renumbers them in its order, as CUDA_VISIBLE_DEVICES does: Vulkan ignores the GPU engines'
variables, so this is how a scheduler (Ray, Slurm) gives each worker its own GPU. Pick by UUID where several GPUs of
one kind are present: indices follow the loader's order, which can differ between processes.
Set TOSA_VK_VALIDATION=1 (or =warn) to enable VK_LAYER_KHRONOS_validation; its messages are collected in
`Device.validation_messages`, which a model reports after the load or run that caused them (an error, or a warning
with =warn: tosa_vk/backends/on_device.py OnDevice.report_validation).
Where the instance offers VK_EXT_debug_utils, `Device.labels` names objects and labels dispatches for GPU tools
(tosa_vk/vulkan/labels.py; TOSA_VK_DEBUG_LABELS=0 turns it off).
"""

from __future__ import annotations

import contextlib
import glob
import os
import threading
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from .. import device_class
from ..abi.shader_abi import TEXEL_SAMPLERS
from ..errors import VulkanError
from ..target import Target, for_driver
from . import labels as debug_labels
from .loader import api, install, no_driver
from .threads import compute_threads

vk = api()  # the `vulkan` package; a VulkanError with the fix where there is no loader

API_VERSION = vk.VK_MAKE_VERSION(1, 3, 0)
VALIDATION_LAYER = "VK_LAYER_KHRONOS_validation"
CONDITIONAL_RENDERING = "VK_EXT_conditional_rendering"
COOPERATIVE_MATRIX = "VK_KHR_cooperative_matrix"
# VkComponentTypeKHR -> GLSL type, for the cooperative-matrix shapes a device lists
_COMPONENT = {0: "float16_t", 1: "float", 3: "int8_t", 5: "int", 6: "int64_t", 7: "uint8_t", 9: "uint"}
_TYPE_NAMES = {
    vk.VK_PHYSICAL_DEVICE_TYPE_OTHER: "other",
    vk.VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: "integrated",
    vk.VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: "discrete",
    vk.VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: "virtual",
    vk.VK_PHYSICAL_DEVICE_TYPE_CPU: "cpu",
}
_TYPE_ORDER = ["discrete", "integrated", "virtual", "other", "cpu"]


@dataclass
class DeviceInfo:
    """What a physical device offers: the facts that decide which shader variants are legal."""

    index: int
    name: str
    type: str
    api_version: str
    driver_version: int
    vendor_id: int
    device_id: int
    subgroup_size: int
    features: dict[str, bool] = field(default_factory=dict)
    limits: dict[str, Any] = field(default_factory=dict)
    driver_name: str = ""
    uuid: str = ""  # VkPhysicalDeviceIDProperties.deviceUUID, hex
    physical: int = -1  # its index in vkEnumeratePhysicalDevices (`index` is the visible one)
    # (A/B type, accumulator type, M, N, K) of the subgroup-scope cooperative-matrix products it offers
    coopmat_shapes: tuple[tuple[str, str, int, int, int], ...] = ()

    @property
    def device_class(self) -> str:
        """Its class by its properties (tosa_vk/device_class.py), before any TOSA_VK_TARGET."""
        return device_class.classify(self.vendor_id, self.driver_name, self.type)

    @property
    def kind(self) -> str:
        """discrete / integrated / virtual / cpu / other."""
        return self.type

    @property
    def driver(self) -> str:
        return f"{self.driver_name or self.name} {self.driver_version}"

    def as_dict(self) -> dict:
        return {**self.__dict__, "kind": self.kind, "driver": self.driver, "device_class": self.device_class}

    @property
    def target(self) -> Target:
        """What the compiler may assume about this device (tosa_vk/target.py)."""
        lim = self.limits
        return for_driver(
            Target(
                self.name,
                frozenset(k for k, v in self.features.items() if v),
                tuple(lim["maxComputeWorkGroupCount"]),
                lim["maxComputeWorkGroupInvocations"],
                lim["maxStorageBufferRange"],
                lim["minStorageBufferOffsetAlignment"],
                lim["maxPushConstantsSize"],
                self.subgroup_size,
                lim["maxTexelBufferElements"],
                lim["minTexelBufferOffsetAlignment"],
                driver=f"{self.driver_name or self.name} {self.driver_version}",
                device_uuid=self.uuid,
                max_shared_memory=lim.get("maxComputeSharedMemorySize", 16384),
                device_class=self.device_class,
                coopmat_shapes=self.coopmat_shapes,
            ),
            f"{self.driver_name} {self.name}",
        )


def _version(v: int) -> str:
    return f"{vk.VK_VERSION_MAJOR(v)}.{vk.VK_VERSION_MINOR(v)}.{vk.VK_VERSION_PATCH(v)}"


def validation_requested() -> bool:
    return os.environ.get("TOSA_VK_VALIDATION", "") not in ("", "0")


def validation_warns() -> bool:
    """TOSA_VK_VALIDATION=warn: the layer's messages are warnings, not errors."""
    return os.environ.get("TOSA_VK_VALIDATION", "").lower() == "warn"


# where the Vulkan loader looks for driver manifests (its defaults on Linux), for lavapipe's own
_ICD_DIRS = (
    "/usr/local/etc/vulkan/icd.d",
    "/usr/local/share/vulkan/icd.d",
    "/etc/vulkan/icd.d",
    "/usr/share/vulkan/icd.d",
)
_DRIVER_VARIABLES = ("VK_DRIVER_FILES", "VK_ICD_FILENAMES")


def asks_for_lavapipe(selector: int | str | None) -> bool:
    """Whether the device asked for (the selector, else TOSA_VK_DEVICE) is Mesa's lavapipe by name."""
    text = str(selector if selector is not None else os.environ.get("TOSA_VK_DEVICE", "")).lower()
    return "lavapipe" in text or "llvmpipe" in text


@contextlib.contextmanager
def loader_drivers(selector: int | str | None) -> Iterator[None]:
    """Only lavapipe's driver manifests for the loader while an instance is made, when lavapipe is the device asked
    for and the user set no driver list: the loader otherwise opens every installed Mesa driver (intel, radeon, ..),
    ~50-500 ms here. The variables are read when the instance is created, so they are restored after."""
    if not asks_for_lavapipe(selector) or any(v in os.environ for v in _DRIVER_VARIABLES):
        yield
        return
    dirs = [os.path.join(d, "vulkan", "icd.d") for d in os.environ.get("XDG_DATA_DIRS", "").split(":") if d]
    found = sorted({f for d in (*dirs, *_ICD_DIRS) for f in glob.glob(os.path.join(d, "lvp_icd*.json"))})
    if not found:
        yield
        return
    os.environ["VK_DRIVER_FILES"] = os.pathsep.join(found)
    try:
        yield
    finally:
        os.environ.pop("VK_DRIVER_FILES", None)


def create_instance(validation: bool = False, messages: list[str] | None = None, labels: bool = False):
    """A Vulkan 1.3 instance (and the debug messenger collecting into `messages` when validating); `labels`:
    VK_EXT_debug_utils enabled for object names and command-buffer labels (the caller checked it is offered)."""
    app = vk.VkApplicationInfo(
        sType=vk.VK_STRUCTURE_TYPE_APPLICATION_INFO,
        pApplicationName="tosa_vk",
        applicationVersion=1,
        pEngineName="tosa_vk",
        engineVersion=1,
        apiVersion=API_VERSION,
    )
    layers, extensions = [], []
    if validation:
        available = {p.layerName for p in vk.vkEnumerateInstanceLayerProperties()}
        if VALIDATION_LAYER not in available:
            raise VulkanError(f"{VALIDATION_LAYER} is not installed (Debian: apt-get install vulkan-validationlayers)")
        layers, extensions = [VALIDATION_LAYER], [vk.VK_EXT_DEBUG_UTILS_EXTENSION_NAME]
    elif labels:
        extensions = [vk.VK_EXT_DEBUG_UTILS_EXTENSION_NAME]
    info = vk.VkInstanceCreateInfo(
        sType=vk.VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
        pApplicationInfo=app,
        enabledLayerCount=len(layers),
        ppEnabledLayerNames=layers or None,
        enabledExtensionCount=len(extensions),
        ppEnabledExtensionNames=extensions or None,
    )
    try:
        instance = vk.vkCreateInstance(info, None)
    except (vk.VkError, OSError) as err:  # OSError: no libvulkan.so.1
        raise no_driver(err) from None
    messenger = None
    if validation:

        def callback(severity, types, data, user):
            messages.append(vk.ffi.string(data.pMessage).decode(errors="replace"))
            return 0

        create = vk.vkGetInstanceProcAddr(instance, "vkCreateDebugUtilsMessengerEXT")
        messenger = create(
            instance,
            vk.VkDebugUtilsMessengerCreateInfoEXT(
                sType=vk.VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
                messageSeverity=vk.VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT
                | vk.VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
                messageType=vk.VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT
                | vk.VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT
                | vk.VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT,
                pfnUserCallback=callback,
            ),
            None,
        )
        messenger = (messenger, callback)  # keep the callback alive as long as the messenger
    return instance, messenger


def _query(index: int, pd, instance) -> DeviceInfo:
    props = vk.vkGetPhysicalDeviceProperties(pd)
    maintenance3 = vk.VkPhysicalDeviceMaintenance3Properties(
        sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES
    )
    ids = vk.VkPhysicalDeviceIDProperties(sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES, pNext=maintenance3)
    driver = vk.VkPhysicalDeviceDriverProperties(
        sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES, pNext=ids
    )
    subgroup = vk.VkPhysicalDeviceSubgroupProperties(
        sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES, pNext=driver
    )
    vk.vkGetPhysicalDeviceProperties2(
        pd, vk.VkPhysicalDeviceProperties2(sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, pNext=subgroup)
    )
    extensions = {e.extensionName for e in vk.vkEnumerateDeviceExtensionProperties(pd, None)}
    conditional = vk.VkPhysicalDeviceConditionalRenderingFeaturesEXT(
        sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_CONDITIONAL_RENDERING_FEATURES_EXT
    )
    coopmat = vk.VkPhysicalDeviceCooperativeMatrixFeaturesKHR(
        sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR,
        pNext=conditional if CONDITIONAL_RENDERING in extensions else None,
    )
    f13 = vk.VkPhysicalDeviceVulkan13Features(
        sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES,
        pNext=coopmat
        if COOPERATIVE_MATRIX in extensions
        else conditional
        if CONDITIONAL_RENDERING in extensions
        else None,
    )
    f12 = vk.VkPhysicalDeviceVulkan12Features(sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES, pNext=f13)
    f11 = vk.VkPhysicalDeviceVulkan11Features(sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES, pNext=f12)
    f2 = vk.VkPhysicalDeviceFeatures2(sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, pNext=f11)
    vk.vkGetPhysicalDeviceFeatures2(pd, f2)
    core = f2.features
    features = {
        # out-of-range reads of a model's shader return zeros instead of reading other memory
        "robustBufferAccess": core.robustBufferAccess,
        "shaderInt64": core.shaderInt64,
        "shaderInt16": core.shaderInt16,
        "shaderFloat64": core.shaderFloat64,
        "shaderInt8": f12.shaderInt8,
        "shaderFloat16": f12.shaderFloat16,
        "storageBuffer8BitAccess": f12.storageBuffer8BitAccess,
        "storageBuffer16BitAccess": f11.storageBuffer16BitAccess,
        # VK_EXT_conditional_rendering: a WHILE_LOOP's iterations recorded ahead, skipped on the device once its
        # condition is false (tosa_vk/vulkan/runtime.py)
        "conditionalRendering": CONDITIONAL_RENDERING in extensions and conditional.conditionalRendering,
        # int8 products four at a time (OpSDot, shaders/include/dot.glsl): the int8dot kernel feature
        "shaderIntegerDotProduct": f13.shaderIntegerDotProduct,
        # VK_KHR_cooperative_matrix: the coopmat kernel family (tosa_vk/device_class.py); its GLSL needs the Vulkan
        # memory model (GL_KHR_memory_scope_semantics: the VulkanMemoryModel capability), enabled with it
        "cooperativeMatrix": COOPERATIVE_MATRIX in extensions
        and bool(coopmat.cooperativeMatrix)
        and bool(f12.vulkanMemoryModel),
        # a property, not a feature to enable: compute shaders may use subgroup arithmetic (the subgroup family)
        "subgroupArithmetic": bool(
            subgroup.supportedStages & vk.VK_SHADER_STAGE_COMPUTE_BIT
            and subgroup.supportedOperations & vk.VK_SUBGROUP_FEATURE_ARITHMETIC_BIT
        ),
    }
    lim = props.limits
    texels = all(  # the formats of texel-buffer reads (mandatory in Vulkan 1.0, checked all the same)
        vk.vkGetPhysicalDeviceFormatProperties(pd, getattr(vk, fmt)).bufferFeatures
        & vk.VK_FORMAT_FEATURE_UNIFORM_TEXEL_BUFFER_BIT
        for fmt in TEXEL_SAMPLERS
    )
    limits = {
        "maxStorageBufferRange": lim.maxStorageBufferRange,
        "maxMemoryAllocationSize": maintenance3.maxMemoryAllocationSize,  # the arena is one allocation
        "maxComputeWorkGroupCount": list(lim.maxComputeWorkGroupCount),
        "maxComputeWorkGroupSize": list(lim.maxComputeWorkGroupSize),
        "maxComputeWorkGroupInvocations": lim.maxComputeWorkGroupInvocations,
        "maxComputeSharedMemorySize": lim.maxComputeSharedMemorySize,
        "maxPushConstantsSize": lim.maxPushConstantsSize,
        "maxBoundDescriptorSets": lim.maxBoundDescriptorSets,
        "minStorageBufferOffsetAlignment": lim.minStorageBufferOffsetAlignment,
        # 0 elements: no texel reads
        "maxTexelBufferElements": lim.maxTexelBufferElements if texels else 0,
        "minTexelBufferOffsetAlignment": lim.minTexelBufferOffsetAlignment,
        "timestampPeriod": lim.timestampPeriod,
    }
    return DeviceInfo(
        index,
        props.deviceName,
        _TYPE_NAMES.get(props.deviceType, "other"),
        _version(props.apiVersion),
        props.driverVersion,
        props.vendorID,
        props.deviceID,
        subgroup.subgroupSize,
        {k: bool(v) for k, v in features.items()},
        limits,
        vk.ffi.string(driver.driverName).decode(errors="replace"),
        bytes(vk.ffi.buffer(ids.deviceUUID)).hex(),
        index,
        _coopmat_shapes(instance, pd) if features["cooperativeMatrix"] else (),
    )


def _coopmat_shapes(instance, pd) -> tuple[tuple[str, str, int, int, int], ...]:
    """The subgroup-scope cooperative-matrix products the device lists with A and B of one type, C = result."""
    try:
        props = vk.vkGetInstanceProcAddr(instance, "vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR")(pd)
    except (vk.VkError, vk.ProcedureNotFoundError):
        return ()
    shapes = []
    for p in props:
        a, b, c, r = (_COMPONENT.get(t) for t in (p.AType, p.BType, p.CType, p.ResultType))
        if a is not None and a == b and c is not None and c == r and p.scope == vk.VK_SCOPE_SUBGROUP_KHR:
            shapes.append((a, c, p.MSize, p.NSize, p.KSize))
    return tuple(sorted(set(shapes)))


VISIBLE = "TOSA_VK_VISIBLE_DEVICES"


def enumerate_devices(all_devices: bool = False) -> list[DeviceInfo]:
    """The Vulkan physical devices this process may use (TOSA_VK_VISIBLE_DEVICES; `all_devices`: every one, in the
    loader's order)."""
    instance, _ = create_instance()
    try:
        found = [_query(i, pd, instance) for i, pd in enumerate(vk.vkEnumeratePhysicalDevices(instance))]
    finally:
        vk.vkDestroyInstance(instance, None)
    return found if all_devices else visible(found)


def visible(devices: list[DeviceInfo], spec: str | None = None) -> list[DeviceInfo]:
    """The devices TOSA_VK_VISIBLE_DEVICES (or `spec`) names — loader indices or UUIDs, comma-separated — renumbered
    0, 1, .. in its order; all of them when it is unset, none when it is empty."""
    spec = os.environ.get(VISIBLE) if spec is None else spec
    if spec is None:
        return devices
    chosen: list[DeviceInfo] = []
    for entry in filter(None, (e.strip() for e in spec.split(","))):
        if entry.isdigit():
            hits = [d for d in devices if d.physical == int(entry)]
        else:
            hits = _by_uuid(devices, entry) or []
        if len(hits) != 1:
            raise VulkanError(
                f"{VISIBLE}={spec!r}: {entry!r} is not a device index or UUID (prefix) of exactly one device; have: "
                + _listing(devices)
            )
        if any(d.physical == hits[0].physical for d in chosen):
            raise VulkanError(f"{VISIBLE}={spec!r} names {hits[0].name} ({hits[0].uuid}) twice")
        chosen.append(replace(hits[0], index=len(chosen)))
    return chosen


def _by_uuid(devices: list[DeviceInfo], selector: str) -> list[DeviceInfo] | None:
    """The devices whose UUID starts with `selector` (hex digits, dashes and a 'GPU-' prefix ignored); None when
    it is not a UUID: fewer than 8 hex digits."""
    digits = selector.lower().removeprefix("gpu-").replace("-", "")
    if len(digits) < 8 or any(ch not in "0123456789abcdef" for ch in digits):
        return None
    return [d for d in devices if d.uuid.startswith(digits)]


def _listing(devices: list[DeviceInfo]) -> str:
    return ", ".join(f"#{d.index} {d.name} ({d.uuid})" for d in devices) or "none"


def select(devices: list[DeviceInfo], selector: int | str | None = None) -> DeviceInfo:
    """Pick a device by index, UUID (prefix) or name substring (case-insensitive); default TOSA_VK_DEVICE, then by
    type."""
    if not devices:
        hidden = f" ({VISIBLE}={os.environ[VISIBLE]!r})" if VISIBLE in os.environ else ""
        raise VulkanError(f"no Vulkan device found{hidden}; install a driver: {install()}")
    if selector is None:
        selector = os.environ.get("TOSA_VK_DEVICE") or None
    if selector is None:
        return min(devices, key=lambda d: (_TYPE_ORDER.index(d.type), d.index))
    if isinstance(selector, int) or str(selector).isdigit():
        i = int(selector)
        if not 0 <= i < len(devices):
            raise VulkanError(f"no Vulkan device #{i}; there are {len(devices)}: " + _listing(devices))
        return devices[i]
    by_uuid = _by_uuid(devices, str(selector))
    if by_uuid is not None and len(by_uuid) > 1:
        raise VulkanError(f"UUID prefix {selector!r} matches {len(by_uuid)} devices: " + _listing(by_uuid))
    name = str(selector).lower()
    hits = by_uuid or [
        d for d in devices if name in d.name.lower() or (name == "lavapipe" and d.device_class == "lavapipe")
    ]
    if not hits:
        raise VulkanError(f"no Vulkan device with a UUID or name like {selector!r}; have: " + _listing(devices))
    return hits[0]


class Device:
    """An open logical device with one compute queue. Use as a context manager or call close()."""

    def __init__(self, selector: int | str | None = None, validation: bool | None = None, threads: int | None = None):
        """`threads`: lavapipe's compute threads (LP_NUM_THREADS, tosa_vk/vulkan/threads.py; None: the driver's
        default, or what the user set)."""
        self.threads = threads
        self.validation_messages: list[str] = []
        # vkQueueSubmit needs external synchronisation of the queue: Models sharing this device take turns
        self.queue_lock = threading.Lock()
        # device tensors' buffers (memory.DeviceBuffer) still held: copied to the host when the device closes
        self.buffers: weakref.WeakSet = weakref.WeakSet()
        self.unified_memory: bool | None = None  # a memory type both host-visible and device-local (memory.py)
        self.memory_properties: Any = None  # VkPhysicalDeviceMemoryProperties, asked once (memory.py)
        validation = validation_requested() if validation is None else validation
        with loader_drivers(selector):
            labelled = debug_labels.requested() and debug_labels.offered()
            self.instance, self._messenger = create_instance(validation, self.validation_messages, labelled)
        # names and labels for GPU tools; None: nothing is named or labelled (tosa_vk/vulkan/labels.py)
        self.labels: debug_labels.Labels | None = None
        try:
            if labelled:
                self.labels = debug_labels.Labels(self.instance)
            with compute_threads(threads):  # lavapipe makes its screen here
                physical = vk.vkEnumeratePhysicalDevices(self.instance)
            self.info = select(visible([_query(i, pd, self.instance) for i, pd in enumerate(physical)]), selector)
            self.physical = physical[self.info.physical]
            families = vk.vkGetPhysicalDeviceQueueFamilyProperties(self.physical)
            compute = [i for i, q in enumerate(families) if q.queueFlags & vk.VK_QUEUE_COMPUTE_BIT]
            if not compute:
                raise VulkanError(f"{self.info.name} has no compute queue")
            self.queue_family = compute[0]
            self._open()
        except BaseException:
            self._destroy_instance()
            raise

    def _open(self) -> None:
        """The logical device with one compute queue and the features tosa_vk's kernels use."""
        queue_info = vk.VkDeviceQueueCreateInfo(
            sType=vk.VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
            queueFamilyIndex=self.queue_family,
            queueCount=1,
            pQueuePriorities=[1.0],
        )
        extensions = [
            e
            for e, on in (
                (CONDITIONAL_RENDERING, "conditionalRendering"),
                (COOPERATIVE_MATRIX, "cooperativeMatrix"),
            )
            if self.info.features[on]
        ]
        self.device = vk.vkCreateDevice(
            self.physical,
            vk.VkDeviceCreateInfo(
                sType=vk.VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
                pNext=self._features(),
                queueCreateInfoCount=1,
                pQueueCreateInfos=[queue_info],
                enabledExtensionCount=len(extensions),
                ppEnabledExtensionNames=extensions or None,
            ),
            None,
        )
        self.queue = vk.vkGetDeviceQueue(self.device, self.queue_family, 0)
        if self.info.features["conditionalRendering"]:
            self.begin_conditional = vk.vkGetDeviceProcAddr(self.device, "vkCmdBeginConditionalRenderingEXT")
            self.end_conditional = vk.vkGetDeviceProcAddr(self.device, "vkCmdEndConditionalRenderingEXT")

    def twin(self) -> Device:
        """Another logical device on this one's instance and physical device, with the same features and a queue
        of its own (on lavapipe: its own queue thread and LLVM context, so pipelines compile in parallel:
        tosa_vk/vulkan/warmup.py). Its close() leaves the instance to this device."""
        twin = object.__new__(Device)
        twin.validation_messages = self.validation_messages  # (the instance's messenger writes here anyway)
        twin.queue_lock = threading.Lock()
        twin.buffers = weakref.WeakSet()
        twin.unified_memory, twin.memory_properties = self.unified_memory, self.memory_properties
        twin.instance, twin._messenger, twin.labels = None, None, None
        twin.info, twin.physical, twin.queue_family = self.info, self.physical, self.queue_family
        twin.threads = self.threads  # the instance's screen, so its compute threads, are this device's
        twin._open()
        return twin

    def name(self, kind: int, handle, text: str) -> None:
        """Names a Vulkan object (VK_OBJECT_TYPE_* `kind`) for GPU tools, where debug labels are on."""
        if self.labels is not None:
            self.labels.name(self.device, kind, handle, text)

    def _features(self):
        """Enables the shader features tosa_vk's kernels use, where the device has them (see DeviceInfo)."""
        f = self.info.features
        conditional = vk.VkPhysicalDeviceConditionalRenderingFeaturesEXT(
            sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_CONDITIONAL_RENDERING_FEATURES_EXT, conditionalRendering=True
        )
        coopmat = vk.VkPhysicalDeviceCooperativeMatrixFeaturesKHR(
            sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR,
            pNext=conditional if f["conditionalRendering"] else None,
            cooperativeMatrix=True,
        )
        f13 = vk.VkPhysicalDeviceVulkan13Features(
            sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES,
            pNext=coopmat if f["cooperativeMatrix"] else conditional if f["conditionalRendering"] else None,
            shaderIntegerDotProduct=f["shaderIntegerDotProduct"],
        )
        f12 = vk.VkPhysicalDeviceVulkan12Features(
            sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
            pNext=f13,
            shaderInt8=f["shaderInt8"],
            shaderFloat16=f["shaderFloat16"],
            storageBuffer8BitAccess=f["storageBuffer8BitAccess"],
            vulkanMemoryModel=f["cooperativeMatrix"],
        )
        f11 = vk.VkPhysicalDeviceVulkan11Features(
            sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES,
            pNext=f12,
            storageBuffer16BitAccess=f["storageBuffer16BitAccess"],
        )
        core = vk.VkPhysicalDeviceFeatures(
            robustBufferAccess=f["robustBufferAccess"],
            shaderInt64=f["shaderInt64"],
            shaderInt16=f["shaderInt16"],
            shaderFloat64=f["shaderFloat64"],
        )
        return vk.VkPhysicalDeviceFeatures2(
            sType=vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, pNext=f11, features=core
        )

    def _destroy_instance(self) -> None:
        if self._messenger is not None:
            destroy = vk.vkGetInstanceProcAddr(self.instance, "vkDestroyDebugUtilsMessengerEXT")
            destroy(self.instance, self._messenger[0], None)
            self._messenger = None
        if self.instance is not None:
            vk.vkDestroyInstance(self.instance, None)
            self.instance = None

    def submit_once(self, record: Callable) -> None:
        """A one-off command buffer: `record(cmd)` fills it, then it runs on the queue and is waited for (a
        transient pool and fence of its own, so any thread may call it)."""
        vkd = self.device
        pool = vk.vkCreateCommandPool(
            vkd,
            vk.VkCommandPoolCreateInfo(
                sType=vk.VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                queueFamilyIndex=self.queue_family,
                flags=vk.VK_COMMAND_POOL_CREATE_TRANSIENT_BIT,
            ),
            None,
        )
        fence = vk.vkCreateFence(vkd, vk.VkFenceCreateInfo(sType=vk.VK_STRUCTURE_TYPE_FENCE_CREATE_INFO), None)
        try:
            cmd = vk.vkAllocateCommandBuffers(
                vkd,
                vk.VkCommandBufferAllocateInfo(
                    sType=vk.VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                    commandPool=pool,
                    level=vk.VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                    commandBufferCount=1,
                ),
            )[0]
            begin = vk.VkCommandBufferBeginInfo(
                sType=vk.VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                flags=vk.VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT,
            )
            vk.vkBeginCommandBuffer(cmd, begin)
            everything(cmd)
            record(cmd)
            everything(cmd)
            vk.vkEndCommandBuffer(cmd)
            info = vk.VkSubmitInfo(sType=vk.VK_STRUCTURE_TYPE_SUBMIT_INFO, commandBufferCount=1, pCommandBuffers=[cmd])
            with self.queue_lock:
                vk.vkQueueSubmit(self.queue, 1, [info], fence)
            vk.vkWaitForFences(vkd, 1, [fence], vk.VK_TRUE, 2**63 - 1)
        finally:
            vk.vkDestroyFence(vkd, fence, None)
            vk.vkDestroyCommandPool(vkd, pool, None)

    def close(self) -> None:
        if getattr(self, "device", None) is not None:
            for buffer in list(getattr(self, "buffers", ())):  # device tensors still held keep their values
                try:
                    buffer.evacuate()
                except Exception:  # noqa: S110 - a tensor that cannot be read back is freed with the device
                    pass
            vk.vkDeviceWaitIdle(self.device)
            vk.vkDestroyDevice(self.device, None)
            self.device = None
        self._destroy_instance()

    def __enter__(self) -> Device:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Device(#{self.info.index} {self.info.name!r}, {self.info.type}, Vulkan {self.info.api_version})"


def everything(cmd) -> None:
    """A memory barrier between all earlier and all later work (compute, transfers, host) in a command buffer: what
    a one-off copy needs against the queue's earlier submissions and the host."""
    every = vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | vk.VK_PIPELINE_STAGE_TRANSFER_BIT | vk.VK_PIPELINE_STAGE_HOST_BIT
    access = (
        vk.VK_ACCESS_SHADER_READ_BIT
        | vk.VK_ACCESS_SHADER_WRITE_BIT
        | vk.VK_ACCESS_TRANSFER_READ_BIT
        | vk.VK_ACCESS_TRANSFER_WRITE_BIT
        | vk.VK_ACCESS_HOST_READ_BIT
        | vk.VK_ACCESS_HOST_WRITE_BIT
    )
    if not _EVERYTHING:  # built once: the vulkan module's struct marshalling costs ~30 us a struct
        _EVERYTHING.append(
            vk.VkMemoryBarrier(sType=vk.VK_STRUCTURE_TYPE_MEMORY_BARRIER, srcAccessMask=access, dstAccessMask=access)
        )
    vk.vkCmdPipelineBarrier(cmd, every, every, 0, 1, _EVERYTHING, 0, None, 0, None)


_EVERYTHING: list = []
