"""The NVIDIA GPU backend: Kernels to NVPTX LLVM IR, PTX text for sm_90, and cuLaunchKernel."""
