"""The one place that loads Vulkan. The `vulkan` package opens the Vulkan loader (libvulkan.so.1, vulkan-1.dll,
libvulkan.dylib) when it is imported and fails with a bare OSError where there is none; every module of this layer
takes the package from `api()`, which turns that into a VulkanError saying what is missing and the command that
installs it. A loader without a driver fails later, at vkCreateInstance: `no_driver()` words that error. `tosa-vk
doctor` (tosa_vk/tools/cli/doctor.py) reads `loader_facts()`. This module itself imports without libvulkan.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from ..errors import VulkanError

# What installs a Vulkan loader and a driver, by sys.platform (Linux: any other platform name)
INSTALL = {
    "linux": "Debian / Ubuntu: sudo apt-get install libvulkan1 mesa-vulkan-drivers (the loader and Mesa's drivers: "
    "lavapipe, a CPU device, and AMD / Intel GPUs); an NVIDIA GPU: NVIDIA's driver",
    "darwin": "brew install vulkan-loader molten-vk (Vulkan on Metal)",
    "win32": "your GPU vendor's driver (it installs vulkan-1.dll)",
}
LIBRARY = {"linux": "libvulkan.so.1", "darwin": "libvulkan.dylib", "win32": "vulkan-1.dll"}
REFERENCE = "or run on the numpy reference backend: backend='reference' (tosa-vk run --backend reference)"
# the loader's variables naming driver manifests (the first is the newer name)
DRIVER_VARIABLES = ("VK_DRIVER_FILES", "VK_ICD_FILENAMES")


def install() -> str:
    """The command that installs a Vulkan loader and driver on this platform."""
    return INSTALL.get(sys.platform, INSTALL["linux"])


def api() -> Any:
    """The `vulkan` package (the loader opened); VulkanError with the fix where it cannot be imported."""
    try:
        import vulkan
    except OSError:  # its import dlopens the loader (its message speaks of an SDK, which is not what is missing)
        raise VulkanError(
            f"no Vulkan loader: {library()} cannot be opened; install it: {install()}; {REFERENCE}"
        ) from None
    except ImportError as err:
        raise VulkanError(f"the vulkan Python package cannot be imported ({err}): pip install vulkan") from None
    return vulkan


def driver_variables() -> str:
    """VK_DRIVER_FILES / VK_ICD_FILENAMES as set, naming the manifests that do not exist ('' when neither is set)."""
    said = []
    for name in DRIVER_VARIABLES:
        if name in os.environ:
            missing = [f for f in os.environ[name].split(os.pathsep) if f and not os.path.exists(f)]
            said.append(f"{name}={os.environ[name]}" + (f" (no such file: {', '.join(missing)})" if missing else ""))
    return "; ".join(said)


def library() -> str:
    """The loader's file name on this platform."""
    return LIBRARY.get(sys.platform, LIBRARY["linux"])


def driver_missing(err: BaseException) -> str:
    """What a failed vkCreateInstance means: the loader is there, a driver for it is not (or the one there refuses
    Vulkan 1.3); the variables that restrict the loader's search when set."""
    detail = f"{type(err).__name__}: {err}".rstrip(": ")
    variables = driver_variables()
    return f"cannot create a Vulkan instance ({detail}): no Vulkan driver" + (
        f"; the loader reads only {variables}" if variables else ""
    )


def no_driver(err: BaseException) -> VulkanError:
    return VulkanError(f"{driver_missing(err)}; install one: {install()}; {REFERENCE}")


def loader_facts() -> dict[str, Any]:
    """The loader as `tosa-vk doctor` reports it: found, its file, the Vulkan version it offers (vkEnumerateInstance
    Version), the vulkan package's version, and the error (with its fix) when it cannot be opened."""
    facts: dict[str, Any] = {"found": False, "library": None, "version": None, "package": None, "error": None}
    try:
        vk = api()
    except VulkanError as err:
        facts["error"] = str(err)
        return facts
    facts["found"] = True
    facts["package"] = getattr(vk, "__version__", None)
    try:
        v = vk.vkEnumerateInstanceVersion()
        facts["version"] = f"{vk.VK_VERSION_MAJOR(v)}.{vk.VK_VERSION_MINOR(v)}.{vk.VK_VERSION_PATCH(v)}"
    except Exception:  # noqa: BLE001 - a Vulkan 1.0 loader has no vkEnumerateInstanceVersion
        facts["version"] = "1.0"
    facts["library"] = _mapped("libvulkan")
    return facts


def _mapped(stem: str) -> str | None:
    """The file of a shared library this process has mapped whose name starts with `stem` (Linux: /proc/self/maps;
    elsewhere None)."""
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                path = line.split(None, 5)[-1].strip()
                if os.path.basename(path).startswith(stem + "."):
                    return path
    except OSError:
        pass
    return None
