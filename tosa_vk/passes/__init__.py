"""Graph-to-graph passes run before lowering (explicit permutes around NHWC-ABI operators, and their elision)."""
