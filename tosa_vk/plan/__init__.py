"""The resource planner: where and how every tensor lives on the device (memory packing; descriptors to come)."""
