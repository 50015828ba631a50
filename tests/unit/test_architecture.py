"""The layers of docs/architecture.md, enforced: every import inside the package is read and
checked against who may import whom, and the entry points' light start is checked too."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "memoryd"

BASE = {
    "memoryd",
    "errors",
    "logs",
    "redaction",
    "charsafe",
    "collector",
    "settings",
    "wording",
}
FOUNDATION = {"sources", "gitrepo", "worktree", "store", "state", "llm", "prompts"}
JOBS = {"extractors", "heartbeat", "rewrite"}

# Who may import whom, by top-level module or subpackage of memoryd (docs/architecture.md).
ALLOWED: dict[str, set[str]] = {
    "memoryd": set(),
    "__main__": {"cli"},
    "errors": set(),
    "charsafe": set(),
    "wording": set(),
    "collector": set(),
    "redaction": {"errors"},
    "logs": {"memoryd", "redaction", "errors"},
    "settings": {"llm", "errors"},
    "llm": {"errors", "logs"},
    "prompts": {"errors"},
    "gitrepo": {"errors", "logs"},
    "worktree": {"gitrepo", "errors", "logs", "charsafe"},
    "store": {"gitrepo", "worktree", "errors", "logs", "charsafe", "collector"},
    "sync": {"gitrepo", "worktree", "store", "errors", "logs"},
    "state": {"llm", "errors", "logs"},
    "sources": {"settings", "redaction", "errors", "logs", "charsafe", "wording"},
    "budget": {"state", "llm", "errors", "logs"},
    "extractors": BASE | FOUNDATION | {"budget"},
    "heartbeat": BASE | FOUNDATION | {"budget", "extractors"},
    "rewrite": BASE | FOUNDATION | {"budget"},
    "reading": BASE | FOUNDATION,
    "jobs": BASE | FOUNDATION | JOBS | {"budget", "reading", "sync"},
    # `memoryd eval`: a labelled set filed by the real jobs into a throw-away store, then scored.
    "eval": BASE | FOUNDATION | JOBS | {"budget", "jobs", "reading"},
    "daemon": BASE | FOUNDATION | JOBS | {"budget", "jobs", "reading", "sync"},
    # Edits the agent runtimes' own configuration files; nothing of memoryd's store or state.
    "connect": {"errors"},
    "cli": BASE
    | FOUNDATION
    | JOBS
    | {"budget", "jobs", "daemon", "reading", "sync", "connect", "eval"},
}


def _unit(module: str) -> str:
    """`memoryd.store.catalog` -> `store`; `memoryd.budget` -> `budget`; `memoryd` -> `memoryd`."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "memoryd"


def _is_unit(name: str) -> bool:
    """Whether `memoryd.<name>` is a module or subpackage (not a name of memoryd/__init__.py)."""
    return (PACKAGE / name).is_dir() or (PACKAGE / f"{name}.py").is_file()


def _module(path: Path) -> str:
    """The dotted module name of a file of the package."""
    return ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(
        ".__init__"
    )


def _imports() -> list[tuple[str, str, str]]:
    """(importing file, importing unit, imported unit) for every memoryd import in the package."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE.parent)
        source = _unit(_module(path))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names: list[str] = []
            if isinstance(node, ast.ImportFrom) and node.module == "memoryd":
                # `from memoryd import sync` names a package; `from memoryd import X` a name
                names = [
                    f"memoryd.{alias.name}" if _is_unit(alias.name) else "memoryd"
                    for alias in node.names
                ]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            for name in names:
                if name == "memoryd" or name.startswith("memoryd."):
                    target = _unit(name)
                    if target != source:
                        found.append((str(relative), source, target))
    return found


def test_every_unit_of_the_package_has_a_rule() -> None:
    units = {_unit(_module(path)) for path in PACKAGE.rglob("*.py")}
    assert units <= set(ALLOWED), f"no layering rule for {sorted(units - set(ALLOWED))}"


def test_no_import_breaks_the_layers() -> None:
    broken = [
        f"{path}: {source} imports {target}"
        for path, source, target in _imports()
        if target not in ALLOWED[source]
    ]
    assert broken == []


def test_the_rules_themselves_have_no_cycle() -> None:
    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        for step in ALLOWED[start] - seen:
            if step == goal or reaches(step, goal, seen | {step}):
                return True
        return False

    assert [unit for unit in ALLOWED if reaches(unit, unit, set())] == []


def test_only_the_adapter_imports_the_sdk_and_nothing_imports_gitpython() -> None:
    sdk, git = [], []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = (
                [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else []
            )
            relative = str(path.relative_to(PACKAGE))
            sdk += [relative for n in names if n.split(".")[0] == "anthropic"]
            git += [relative for n in names if n.split(".")[0] == "git"]
    assert sorted(set(sdk)) == ["llm/anthropic_client.py"]
    assert git == []  # git runs as a command, from `gitrepo/_process.py`


def test_only_the_git_module_runs_git() -> None:
    # A command line memoryd builds is a list (or tuple) whose first element names the program.
    runners = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.List | ast.Tuple)
                and node.elts
                and isinstance(node.elts[0], ast.Constant)
                and node.elts[0].value == "git"
            ):
                runners.append(str(path.relative_to(PACKAGE)))
    assert sorted(set(runners)) == ["gitrepo/_process.py"]


@pytest.mark.parametrize(
    ("argv", "forbidden"),
    [
        (["--version"], ("anthropic", "git", "pydantic", "structlog")),
        (["--help"], ("anthropic", "git", "pydantic", "structlog")),
    ],
)
def test_version_and_help_import_nothing_heavy(argv: list[str], forbidden: tuple[str, ...]) -> None:
    probe = (
        "import sys\n"
        "from memoryd.cli import main\n"
        "try:\n"
        f"    main({argv!r})\n"
        "except SystemExit:\n"
        "    pass\n"
        f"print(sorted(m for m in {forbidden!r} if m in sys.modules))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    assert result.stdout.strip().splitlines()[-1] == "[]"


def test_status_imports_neither_the_sdk_nor_git(tmp_path: Path) -> None:
    config = tmp_path / "memoryd.toml"
    config.write_text(
        f'[store]\npath = "{tmp_path / "store"}"\n[state]\npath = "{tmp_path / "state"}"\n'
        '[llm]\nprovider = "anthropic"\n'
        f'[[agents]]\nname = "a"\n  [[agents.sources]]\n  format = "jsonl"\n'
        f'  path = "{tmp_path / "transcripts"}"\n',
        encoding="utf-8",
    )
    probe = (
        "import sys\n"
        "from memoryd.cli import main\n"
        f"code = main(['--config', {str(config)!r}, '--log-format', 'json', 'status', '--json'])\n"
        "print('code', code, sorted(m for m in ('anthropic', 'git') if m in sys.modules))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    assert result.stdout.strip().splitlines()[-1] == "code 0 []"


# Packages offered to the rest of memoryd only through their __init__ (docs/architecture.md).
FACED = (
    "memoryd.gitrepo",
    "memoryd.worktree",
    "memoryd.sync",
    "memoryd.store.catalog",
    "memoryd.heartbeat",
    "memoryd.settings",
    "memoryd.redaction",
)


def _from_imports() -> list[tuple[str, str, list[str]]]:
    """(importing module, imported module, names) for every absolute `from memoryd... import`."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        importer = _module(path)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.ImportFrom)
                and node.level == 0
                and (node.module == "memoryd" or (node.module or "").startswith("memoryd."))
            ):
                found.append((importer, node.module or "", [alias.name for alias in node.names]))
    return found


def _inside(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def test_a_package_with_a_face_is_imported_only_through_it() -> None:
    reached = [
        f"{importer} imports {module}"
        for importer, module, _ in _from_imports()
        for package in FACED
        if _inside(module, package) and module != package and not _inside(importer, package)
    ]
    assert reached == []


def _package_of(module: str) -> str:
    """The package a module belongs to: itself if it is one, else its parent; a top-level
    module of memoryd (`memoryd.errors`) is a unit of its own."""
    if (PACKAGE.parent / module.replace(".", "/")).is_dir():
        return module
    parent = module.rpartition(".")[0]
    return module if parent == "memoryd" else parent


def test_no_private_name_is_imported_from_another_package() -> None:
    # A private name (`_Progress`) or private module (`_tree`) stays in the package that has it.
    private = [
        f"{importer} imports {name} from {module}"
        for importer, module, names in _from_imports()
        for name in names
        if name.startswith("_")
        and name != "__version__"
        and not _inside(importer, _package_of(module))
    ]
    assert private == []


def _is_module(dotted: str) -> bool:
    path = PACKAGE.parent / dotted.replace(".", "/")
    return path.is_dir() or path.with_suffix(".py").is_file()


def test_no_private_name_is_imported_from_another_module() -> None:
    # A private function, class or constant is the business of its own module; only a private
    # module (`gitrepo._tree`) may be imported, and only inside its package (test above).
    private = [
        f"{importer} imports {name} from {module}"
        for importer, module, names in _from_imports()
        for name in names
        if name.startswith("_") and name != "__version__" and not _is_module(f"{module}.{name}")
    ]
    assert private == []


def _module_graph() -> dict[str, set[str]]:
    """Module -> the memoryd modules it imports, lazy and `TYPE_CHECKING` imports included.
    `from package import name` reaches the submodule when `name` is one, else the package."""
    graph: dict[str, set[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        importer = _module(path)
        edges = graph.setdefault(importer, set())
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                targets = [
                    f"{node.module}.{alias.name}"
                    if _is_module(f"{node.module}.{alias.name}")
                    else node.module
                    for alias in node.names
                ]
            else:
                continue
            edges.update(
                target
                for target in targets
                if _inside(target, "memoryd") and target != importer and _is_module(target)
            )
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_cycle_finder_finds_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c"]]


def test_no_module_cycle_at_all() -> None:
    # Counted with every import, even those inside functions or under TYPE_CHECKING: a cycle
    # hidden by a lazy import is still two modules that cannot be understood one at a time.
    assert _cycles(_module_graph()) == []


def test_every_module_is_under_400_lines() -> None:
    # A module that outgrows this holds more than one idea; split it where the ideas part.
    long = {
        str(path.relative_to(PACKAGE)): lines
        for path in PACKAGE.rglob("*.py")
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) >= 400
    }
    assert long == {}
