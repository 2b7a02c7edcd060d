"""The package's structure, checked: every import points down the layer table in
docs/design.md, no implementation module imports a public face, and no module outgrows the line
budget in pyproject.toml ([tool.gpuarr.architecture]).

Imports are read from the source with `ast`, function-local ones included (a local import is
still a dependency). Importing `gpuarr.lax.lax` is an import of that module, not of the face
`gpuarr.lax` that Python runs first; `from gpuarr import lax` is an import of the face. The test
fails on any upward import and on any face import; there is no list of exceptions."""
import ast
import fnmatch
import re
from collections import Counter
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib", reason="reading pyproject.toml needs Python 3.11")

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "gpuarr"
SETTINGS = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["gpuarr"]["architecture"]


def modules() -> dict:
    """{dotted module name: path} of every module of the package."""
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def imports(name: str, path: Path, known) -> list:
    """(imported module, line) of each gpuarr import in the module, local ones included."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            # `from a import b` imports module a.b when there is one, else a name of a.
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base
                       for a in node.names]
        else:
            continue
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target.startswith("gpuarr") and target != name:
                found.append((target, node.lineno))
    return found


def layer_table() -> tuple:
    """({pattern: layer}, faces) from the fenced `layers` block of docs/design.md."""
    text = (ROOT / "docs" / "design.md").read_text()
    block = re.search(r"```layers\n(.*?)```", text, re.S).group(1)
    layers, faces = {}, set()
    for line in block.splitlines():
        words = line.split("#")[0].split()
        if not words:
            continue
        head, patterns = words[0], words[1:]
        qualified = ["gpuarr" if p == "gpuarr" else f"gpuarr.{p}" for p in patterns]
        if head == "faces":
            faces.update(qualified)
        else:
            layers.update(dict.fromkeys(qualified, int(head)))
    return layers, faces


def layer_of(name: str, layers: dict):
    """The layer of the most specific pattern matching `name` (a name or `package.*`)."""
    matches = [(len(p), n) for p, n in layers.items() if p == name or fnmatch.fnmatchcase(name, p)]
    return max(matches)[1] if matches else None


def violations() -> tuple:
    """(upward imports, face imports, modules with no layer), each import as text."""
    known = modules()
    layers, faces = layer_table()
    unplaced = sorted(m for m in known if m not in faces and layer_of(m, layers) is None)
    upward, face = [], []
    for name, path in sorted(known.items()):
        if name in faces:
            continue
        mine = layer_of(name, layers)
        for target, line in imports(name, path, known):
            where = f"{path.relative_to(ROOT)}:{line} imports {target}"
            if target in faces:
                face.append(where)
            elif mine is not None and (layer_of(target, layers) or 0) > mine:
                upward.append(where)
    return upward, face, unplaced


def test_every_module_has_a_layer():
    assert not violations()[2], "add these modules to the layer table in docs/design.md"


def test_imports_point_down():
    found = violations()[0]
    assert not found, (
        "imports from a higher layer of docs/design.md's table: import from a lower layer, move "
        "the helper to the layer that owns it, or have the higher module fill a slot of the "
        "lower one at import:\n  " + "\n  ".join(found))


def test_no_module_imports_a_face():
    found = violations()[1]
    assert not found, (
        "implementation modules importing a public namespace (a face): import the module that "
        "defines the name instead:\n  " + "\n  ".join(found))


def test_submodule_imports_bind_modules():
    """`from gpuarr.lax import fft` binds what the package holds under that name once it has
    run, which for some names is a function its face re-exports (lax.fft, numpy.einsum,
    random.binomial), not the module the import looks like: import the names from the module."""
    import importlib
    import sys

    import gpuarr  # noqa: F401
    known = modules()
    shadowed = []
    for name, path in sorted(known.items()):
        for node in ast.parse(path.read_text()).body:
            if not (isinstance(node, ast.ImportFrom) and node.module and not node.level):
                continue
            for a in node.names:
                full = f"{node.module}.{a.name}"
                if full in known:
                    bound = getattr(importlib.import_module(name), a.asname or a.name)
                    if bound is not sys.modules[full]:
                        shadowed.append(f"{path.relative_to(ROOT)}:{node.lineno} {full}")
    assert not shadowed, shadowed


def test_line_budget():
    sizes = {p.relative_to(ROOT): len(p.read_text().splitlines()) for p in PACKAGE.rglob("*.py")}
    total = sum(sizes.values())
    largest = Counter(sizes).most_common(5)
    print(f"gpuarr/: {total} lines in {len(sizes)} modules; largest:",
          *(f"{p} ({n})" for p, n in largest), sep="\n  ")
    assert total <= SETTINGS["max-total-lines"], f"the package has {total} lines"
    over = {str(p): n for p, n in sizes.items() if n > SETTINGS["max-file-lines"]}
    allowed = SETTINGS.get("files-over-budget", 0)
    assert len(over) <= allowed, (
        f"modules over {SETTINGS['max-file-lines']} lines: {over}; split them along their seams")
