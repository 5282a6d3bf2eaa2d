"""The benchmark scripts name only what kael has. They run outside the suite, so a name
kael drops (compiler.load_object, once) would break one silently: each script's uses of
a kael module or object, `alias.name`, are looked up here."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

BENCHMARKS = sorted((Path(__file__).resolve().parents[1] / "benchmarks").glob("*.py"))


def _kael_aliases(tree: ast.Module) -> dict[str, object]:
    """Each name a script binds to a kael module or object by import."""
    aliases = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] == "kael":
                    top = a.name if a.asname else a.name.split(".")[0]
                    aliases[a.asname or top] = importlib.import_module(top)
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "kael":
            module = importlib.import_module(node.module)
            for a in node.names:
                found = getattr(module, a.name, None)
                if found is None:  # a submodule not imported by its package
                    found = importlib.import_module(f"{node.module}.{a.name}")
                aliases[a.asname or a.name] = found
    return aliases


@pytest.mark.parametrize("path", BENCHMARKS, ids=[p.name for p in BENCHMARKS])
def test_every_kael_name_a_benchmark_uses_exists(path):
    tree = ast.parse(path.read_text())
    aliases = _kael_aliases(tree)
    missing = sorted(
        f"{node.value.id}.{node.attr} (line {node.lineno})"
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id in aliases
        and not isinstance(node.ctx, ast.Store)
        and not hasattr(aliases[node.value.id], node.attr)
    )
    assert missing == [], f"{path.name} uses names kael does not have: {missing}"


def test_the_check_finds_a_missing_name(tmp_path):
    script = tmp_path / "bench_gone.py"
    script.write_text("from kael.codegen.cpu import compiler\ncompiler.load_object(b'', 's')\n")
    with pytest.raises(AssertionError, match=r"compiler\.load_object \(line 2\)"):
        test_every_kael_name_a_benchmark_uses_exists(script)
