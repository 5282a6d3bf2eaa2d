"""torch.fft and complex arithmetic in kael against PyTorch (pocketfft) and NumPy, side by
side in one run.

Run: python benchmarks/bench_fft.py [--rounds N]
No targets yet (the transforms are new): the table shows where kael stands. complex64
throughout, 2 threads: fft of a batch of power-of-two rows (the radix-2 path), of rows of
1000 (2^3 5^3: DFT matrix plus stages), of one 1M-point signal, and of rows of a prime
length (Bluestein); rfft of real rows; fft2 of images; complex multiply and divide of 1M
elements (a kernel with two outputs over the float views).
"""

from __future__ import annotations

import sys

import common  # noqa: F401  (first: it quiets OpenBLAS before NumPy loads)
import numpy as np
import torch
from common import Case, run

import kael


def _complex(rng, shape) -> np.ndarray:
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(np.complex64)


def cases() -> list[Case]:
    rng = np.random.default_rng(7)
    out = []
    for name, shape in [
        ("fft [64, 1024]", (64, 1024)),
        ("fft [64, 1000]", (64, 1000)),
        ("fft [1, 1048576]", (1, 1 << 20)),
        ("fft [16, 4099] (prime)", (16, 4099)),
    ]:
        x = _complex(rng, shape)
        k, t = kael.tensor(x), torch.from_numpy(x.copy())
        fns = {"kael": lambda k=k: kael.fft.fft(k), "torch": lambda t=t: torch.fft.fft(t)}
        fns["numpy"] = lambda x=x: np.fft.fft(x)
        out.append(Case(name, fns))
    r = rng.standard_normal((256, 4096)).astype(np.float32)
    kr, tr = kael.tensor(r), torch.from_numpy(r.copy())
    rfft = {"kael": lambda: kael.fft.rfft(kr), "torch": lambda: torch.fft.rfft(tr)}
    out.append(Case("rfft [256, 4096] float32", {**rfft, "numpy": lambda: np.fft.rfft(r)}))
    img = _complex(rng, (16, 256, 256))
    ki, ti = kael.tensor(img), torch.from_numpy(img.copy())
    fft2 = {"kael": lambda: kael.fft.fft2(ki), "torch": lambda: torch.fft.fft2(ti)}
    out.append(Case("fft2 [16, 256, 256]", {**fft2, "numpy": lambda: np.fft.fft2(img)}))
    a, b = _complex(rng, 1 << 20), _complex(rng, 1 << 20)
    ka, kb, ta, tb = kael.tensor(a), kael.tensor(b), torch.from_numpy(a), torch.from_numpy(b)
    for op, fn in [("mul", lambda x, y: x * y), ("div", lambda x, y: x / y)]:
        fns = {"kael": lambda fn=fn: fn(ka, kb), "torch": lambda fn=fn: fn(ta, tb)}
        out.append(Case(f"complex {op} 1M", {**fns, "numpy": lambda fn=fn: fn(a, b)}))
    return out


def main() -> int:
    return run(__doc__.splitlines()[0], cases)


if __name__ == "__main__":
    sys.exit(main())
