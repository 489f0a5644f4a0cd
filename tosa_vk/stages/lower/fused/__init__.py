"""Fusion's kernels: epilogue chains after a kernel's result, element-wise groups and row
groups (softmax, layer norm) as one generated kernel."""
