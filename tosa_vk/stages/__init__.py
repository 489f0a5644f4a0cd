"""The compile stages, in the order tosa_vk.compile runs them (compiler.py): passes, partition (with the
user's host_rules), fuse, lower, plan; records.py holds what they pass each other, capture.py the capture twin."""
