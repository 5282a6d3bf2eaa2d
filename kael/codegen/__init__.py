"""Code generation: kael Kernels to LLVM IR, then to host machine code or PTX."""
