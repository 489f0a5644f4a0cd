"""Kernel families a device class may choose over the register kernels (device_class.py):
shared-memory tiled, cooperative-matrix and subgroup kernels."""
