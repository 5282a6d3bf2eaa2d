"""kael IR: per-element expressions, Kernels, graphs, the scheduler and the printer."""
