"""The package's floor plan, computed from its real imports (ast): the stages are folders, a module
imports only from its own stage or the ones below it, nothing goes round in a circle, nothing
imports another module's private names, and the whole stands on at most 8 floors.

Every import counts, at the top of a file or inside a function: a lazy import is still an arrow.
A floor is a stage (folder): its floor is 1 + the highest floor of a stage its modules import
from, so stages that do not depend on each other stand side by side (the store never parses, so
it stands beside the reading).  `python -m pytest tests/test_layers.py -s -n 0` prints the floors.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "bootlog"

# The stages, lowest first.  "" is the ground: the few modules every stage shares (the records that
# flow between stages, the errors, the text escapes, the list of figures).  The package's own
# __init__ (the Python face) stands beside cli/: it calls into the stages, nothing calls into it.
STAGES = ["", "read", "parse", "store", "measure", "judge", "render", "run", "cli"]
MAX_FLOORS = 8


@dataclass
class Module:
    name: str
    path: Path
    imports: dict[str, int] = field(default_factory=dict)  # module -> line
    private: list[str] = field(default_factory=list)  # "line: name" of private names used

    @property
    def stage(self) -> str:
        parts = self.name.split(".")
        if self.name == "bootlog":
            return "cli"
        return parts[1] if len(parts) > 1 and parts[1] in STAGES else ""


def modules() -> dict[str, Module]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if "migrations" in path.parts:  # (Alembic's scripts, loaded by Alembic, not imported)
            continue
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = Module(".".join(parts), path)
    for mod in found.values():
        _read_imports(mod, found)
    return found


def _read_imports(mod: Module, known: dict[str, Module]) -> None:
    tree = ast.parse(mod.path.read_text(), str(mod.path))
    package = mod.name if mod.path.name == "__init__.py" else mod.name.rpartition(".")[0]
    aliases: dict[str, str] = {}  # a local name bound to a bootlog module
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(up + ([base] if base else []))
            for alias in node.names:
                full = f"{base}.{alias.name}"
                if full in known:  # (a module imported from its package)
                    mod.imports.setdefault(full, node.lineno)
                    aliases[alias.asname or alias.name] = full
                elif base in known:
                    mod.imports.setdefault(base, node.lineno)
                    if alias.name.startswith("_"):
                        mod.private.append(f"{node.lineno}: {base}.{alias.name}")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in known:
                    mod.imports.setdefault(alias.name, node.lineno)
                    if alias.asname:
                        aliases[alias.asname] = alias.name
    for node in ast.walk(tree):  # module._name
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in aliases
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
        ):
            mod.private.append(f"{node.lineno}: {aliases[node.value.id]}.{node.attr}")
    mod.imports.pop(mod.name, None)
    # (a module's import of its own package's __init__ is Python's doing, not an arrow)
    for name in list(mod.imports):
        if mod.name.startswith(name + ".") and known[name].path.name == "__init__.py":
            del mod.imports[name]


def cycles(mods: dict[str, Module]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in mods[v].imports:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in mods:
        if v not in index:
            visit(v)
    return out


def floors(mods: dict[str, Module]) -> dict[str, int]:
    """stage -> its floor ("" the ground)."""
    needs: dict[str, set[str]] = {}
    for m in mods.values():
        needs.setdefault(m.stage, set()).update(mods[w].stage for w in m.imports if mods[w].stage != m.stage)
    got: dict[str, int] = {}

    def floor(stage: str) -> int:
        if stage not in got:
            got[stage] = 0  # (a circle of stages ends here; upward() reports it)
            got[stage] = 1 + max((floor(s) for s in needs[stage]), default=0)
        return got[stage]

    for stage in needs:
        floor(stage)
    return got


def longest_chain(mods: dict[str, Module]) -> list[str]:
    """The longest run of imports, module by module (said, not bounded: within a stage a module
    may stand on another)."""
    best: dict[str, list[str]] = {}

    def chain(v: str, seen: frozenset = frozenset()) -> list[str]:
        if v not in best:
            below = [chain(w, seen | {v}) for w in mods[v].imports if w not in seen]
            best[v] = [v, *max(below, key=len, default=[])]
        return best[v]

    return max((chain(v) for v in mods), key=len)


def upward(mods: dict[str, Module]) -> list[str]:
    rank = {s: i for i, s in enumerate(STAGES)}
    return [
        f"{m.name} ({m.stage or 'ground'}) imports {w} ({mods[w].stage or 'ground'}), line {line}"
        for m in mods.values()
        for w, line in m.imports.items()
        if rank[mods[w].stage] > rank[m.stage] or (w == "bootlog" and m.name != "bootlog")
    ]


def listing(mods: dict[str, Module]) -> str:
    got = floors(mods)
    lines = []
    for stage, f in sorted(got.items(), key=lambda kv: (-kv[1], kv[0])):
        names = sorted(
            "__init__" if n in ("bootlog", f"bootlog.{stage}") else n.rpartition(".")[2]
            for n, m in mods.items()
            if m.stage == stage
        )
        lines.append(f"floor {f} {stage or 'ground'}/: " + ", ".join(names))
    chain = longest_chain(mods)
    lines.append(
        f"longest import chain, {len(chain)} modules: " + " -> ".join(c.removeprefix("bootlog.") for c in chain)
    )
    return "\n".join(lines)


def test_no_circles():
    assert cycles(modules()) == []


def test_no_import_runs_back_up():
    assert upward(modules()) == []


def test_no_private_name_of_another_module():
    mods = modules()
    assert [f"{m.name}:{p}" for m in mods.values() for p in m.private] == []


def test_at_most_eight_floors():
    mods = modules()
    print("\n" + listing(mods))
    assert max(floors(mods).values()) <= MAX_FLOORS, listing(mods)


def test_every_module_is_in_a_stage_or_on_the_ground():
    ground = sorted(m.name for m in modules().values() if m.stage == "" and m.name != "bootlog")
    # (records: what the parser makes before the store; shown: the typed records the store gives back)
    assert ground == ["bootlog.errors", "bootlog.figures", "bootlog.records", "bootlog.safe", "bootlog.shown"]


def test_the_checks_catch_what_they_are_for(tmp_path):
    """The checks themselves, on a package made to break each rule once."""
    pkg = tmp_path / "bootlog"
    for d in ("read", "judge"):
        (pkg / d).mkdir(parents=True)
        (pkg / d / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "read" / "a.py").write_text("from bootlog.judge import b\n")  # upward
    (pkg / "judge" / "b.py").write_text("from bootlog.read.a import _x\n")  # private + circle
    global PACKAGE
    saved, PACKAGE = PACKAGE, pkg
    try:
        mods = modules()
    finally:
        PACKAGE = saved
    assert cycles(mods) == [["bootlog.judge.b", "bootlog.read.a"]]
    assert upward(mods) == ["bootlog.read.a (read) imports bootlog.judge.b (judge), line 1"]
    assert mods["bootlog.judge.b"].private == ["1: bootlog.read.a._x"]
