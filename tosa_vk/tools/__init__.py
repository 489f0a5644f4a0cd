"""What a user runs beside the library: the CLI, bench, conformance, compare / profile / node data, Ray,
torch export, the GPU-machine report."""
