"""The runtime: dtypes, errors, memory (allocator, Storage, TensorImpl), devices, threads, caches."""
