"""The user-facing layer: Tensor, views, indexing, factories, printing, interop, eager dispatch."""
