"""kael.backends: torch.backends' switches and queries that PyTorch programs set or read at
start (`kael.backends.cudnn.benchmark = True`, `kael.backends.mps.is_available()`), with the
answers true of kael: it uses no cuDNN, MKL, oneDNN, OpenMP or Metal, so those report
unavailable and their switches are plain settings that change nothing. The float32 matmul
switch (`cuda.matmul.allow_tf32`) is kael.set_float32_matmul_precision's, as in torch."""

from __future__ import annotations


def _false() -> bool:
    return False


class _Library:
    """A backend kael does not use: is_available() (and is_built()) False, and its
    switches as plain attributes a program may set."""

    def __init__(self, name: str, **switches) -> None:
        self.__name__ = f"kael.backends.{name}"
        self.__dict__.update(switches)
        self.is_available = self.is_built = _false

    def __repr__(self) -> str:
        return f"<backend {self.__name__}>"


cudnn = _Library("cudnn", enabled=True, benchmark=False, deterministic=False, allow_tf32=True)
cudnn.version = lambda: None
mps = _Library("mps")
mkldnn = _Library("mkldnn", enabled=True)
mkl = _Library("mkl")
openmp = _Library("openmp")
opt_einsum = _Library("opt_einsum", enabled=False, strategy=None)


class _Matmul:
    """torch.backends.cuda.matmul: allow_tf32 is set_float32_matmul_precision('high') (True)
    or 'highest' (False); the reduced-precision reduction switches are settings."""

    allow_fp16_reduced_precision_reduction = True
    allow_bf16_reduced_precision_reduction = True

    @property
    def allow_tf32(self) -> bool:
        from kael.frontend import conveniences  # it imports the ops: not at start

        return conveniences.get_float32_matmul_precision() != "highest"

    @allow_tf32.setter
    def allow_tf32(self, flag: bool) -> None:
        from kael.frontend import conveniences

        conveniences.set_float32_matmul_precision("high" if flag else "highest")


class _Cuda:
    """torch.backends.cuda: kael's own PTX backend is always built (is_built() True); whether
    a GPU is there is kael.cuda.is_available(). The attention backend switches are settings:
    kael has one attention kernel."""

    matmul = _Matmul()
    __name__ = "kael.backends.cuda"

    def __init__(self) -> None:
        self._sdp = {"flash": True, "mem_efficient": True, "math": True, "cudnn": True}

    @staticmethod
    def is_built() -> bool:
        return True

    def sdp_kernel(self, enable_flash=True, enable_math=True, enable_mem_efficient=True,
                   enable_cudnn=True):  # fmt: skip
        """torch's deprecated context manager over the switches below."""
        wanted = {"flash": enable_flash, "math": enable_math,
                  "mem_efficient": enable_mem_efficient, "cudnn": enable_cudnn}  # fmt: skip
        return _Switches(self._sdp, wanted)


def _switch(name: str):
    def enable(self, enabled: bool) -> None:
        self._sdp[name] = bool(enabled)

    def enabled(self) -> bool:
        return self._sdp[name]

    return enable, enabled


for _name in ("flash", "mem_efficient", "math", "cudnn"):
    _enable, _enabled = _switch(_name)
    setattr(_Cuda, f"enable_{_name}_sdp", _enable)
    setattr(_Cuda, f"{_name}_sdp_enabled", _enabled)


class _Switches:
    """Set some switches for a block, then put them back."""

    def __init__(self, table: dict, wanted: dict) -> None:
        self.table, self.wanted, self.saved = table, wanted, {}

    def __enter__(self) -> None:
        self.saved = dict(self.table)
        self.table.update({k: bool(v) for k, v in self.wanted.items()})

    def __exit__(self, *exc) -> None:
        self.table.update(self.saved)


cuda = _Cuda()


class _Cpu:
    __name__ = "kael.backends.cpu"

    @staticmethod
    def get_cpu_capability() -> str:
        """The widest vector ISA kael's CPU kernels use here: "AVX512", "AVX2" or "DEFAULT"."""
        from kael.codegen.cpu import compiler

        features = compiler.vector_features()
        return "AVX512" if "avx512f" in features else "AVX2" if "avx2" in features else "DEFAULT"


cpu = _Cpu()

__all__ = ["cpu", "cuda", "cudnn", "mkl", "mkldnn", "mps", "openmp", "opt_einsum"]
