"""The host CPU backend: Kernels to vectorized machine code, loaded through LLVM's ORC JIT."""
