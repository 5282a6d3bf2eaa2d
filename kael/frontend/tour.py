"""The tour behind `python -m kael`: the host, a few eager ops, and one kernel inside out."""

from __future__ import annotations

import re

import kael
from kael.codegen.cpu import compiler
from kael.frontend.inspection import kernel_stage, record_launches
from kael.runtime import kernel_cache


def _section(title: str) -> None:
    print(f"\n== {title} " + "=" * max(0, 70 - len(title)))


def _show(code: str, env: dict) -> object:
    value = eval(code, env)  # the tour prints the code it runs, so it runs exactly that
    print(f">>> {code}\n{value}")
    return value


def _block_around(text: str, marker: str, limit: int) -> str:
    """The basic block (or assembly label) holding the first line that contains `marker`."""
    lines = text.splitlines()
    first = next((i for i, line in enumerate(lines) if marker in line), 0)
    start = max(i for i in range(first + 1) if i == 0 or re.match(r"^[.\w]+:", lines[i]))
    return "\n".join(lines[start : start + limit])


def main() -> None:
    target = compiler.host_target()
    print(
        f"kael {kael.__version__}: every operation below ran as machine code that LLVM made for it."
    )
    _section("host")
    print(f"cpu {target['cpu']} ({target['triple']}), LLVM {target['llvm']}")
    print(f"vector features: {', '.join(compiler.vector_features()) or 'none'}")
    print(f"threads: {kael.get_num_threads()}, CUDA available: {kael.cuda.is_available()}")

    _section("eager tensors")
    env = {"kael": kael}
    for code in [
        "kael.arange(6, dtype=kael.float32).reshape(2, 3)",
        "kael.arange(6, dtype=kael.float32).reshape(2, 3).T.contiguous()",
        "kael.tensor([2.7, -2.7, float('nan'), 1e30]).to(kael.int64)",
        "kael.tensor([0.0, 0.5, float('nan')]).to(kael.bool)",
        "kael.linspace(0, 1, 5)",
        "kael.eye(3, dtype=kael.int64)",
        "kael.full((2, 2), 2.5, dtype=kael.float64)[1]",
        "kael.arange(6).reshape(2, 3) * 0.5 + kael.tensor([1, 2, 3])",
        "kael.tensor([-7, 7]) // 2, kael.tensor([-7.0, 7.0]) % 3",
        "kael.exp(kael.tensor([0.0, 1.0, float('-inf')])), kael.tanh(kael.tensor([0.5]))",
        "kael.where(kael.arange(5) > 2, kael.arange(5), -1)",
    ]:
        _show(code, env)

    _section("one kernel, inside out")
    x = kael.arange(1 << 16, dtype=kael.float32)
    print(">>> x = kael.arange(65536, dtype=kael.float32); y = x.to(kael.float64)")
    x.to(kael.float64)  # the first call compiles (or loads from disk); show a warm one
    _, launches = record_launches(x.to, kael.float64)
    kernel = launches[0].kernel
    print(f"launch: {launches[0]}")
    print("\n-- kael IR (the kernel cache key) --")
    print(kernel_stage(kernel, "kael"))
    llvm_ir = kernel_stage(kernel, "llvm")
    print(
        f"\n-- LLVM IR, optimized: the unrolled vector loop ({len(llvm_ir.splitlines())} lines in all) --"
    )
    print(_block_around(llvm_ir, "fpext <", 16))
    asm = kernel_stage(kernel, "asm")
    # the block of the first conversion (x86's cvtps2pd; else the first wide register)
    marker = "cvtps2pd" if "cvtps2pd" in asm else ("zmm" if "zmm" in asm else "ymm")
    print(f"\n-- assembly of the same loop ({len(asm.splitlines())} lines in all) --")
    print(_block_around(asm, marker, 13))
    print(
        "\nKAEL_DEBUG=1..4 prints the same for every kernel an op runs; "
        f"kernel cache: {kernel_cache.cache_dir()}"
    )

    _section("@kael.compile: a whole function, fused")
    print(
        ">>> @kael.compile\n... def layer(x, b, scale):\n"
        "...     h = kael.tanh(x * scale + b) * x\n...     return h, (h * h).sum(-1)"
    )
    layer = kael.compile(_layer)
    x, b = kael.randn(512, 256), kael.randn(256)
    h, sq = layer(x, b, 1.5)
    print(f">>> layer(x, b, 1.5)  # x [512, 256]: {h.shape} and {sq.shape}")
    print(layer.inspect(x, b, 1.5))

    _section("kael.nn: a model as PyTorch builds it, compiled")
    code = "nn.Sequential(nn.Linear(64, 128), nn.GELU(), nn.LayerNorm(128), nn.Linear(128, 10))"
    model = _show(code, {"nn": kael.nn})
    fast = kael.compile(model.eval())
    x = kael.randn(32, 64)
    print(f">>> fast = kael.compile(model.eval()); fast(x).shape  # x [32, 64]\n{fast(x).shape}")
    print(">>> fast.inspect(x)  # each matmul runs its bias and activation on its blocks")
    print("\n".join(line for line in str(fast.inspect(x)).splitlines() if line[:6].strip()))


def _layer(x, b, scale):
    h = kael.tanh(x * scale + b) * x
    return h, (h * h).sum(-1)


if __name__ == "__main__":
    main()
