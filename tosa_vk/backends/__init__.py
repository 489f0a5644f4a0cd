"""The backends, on top of the compile stages and the runtime: each a Model (model.py) that tosa_vk.load picks
(tosa_vk/session.py). reference.py: the numpy op library's interpreter; vulkan.py: a graph compiled for a Vulkan
device and run there; vgf.py: a .vgf's COMPUTE segments run as they are; on_device.py: the device and runtime
the last two own."""
