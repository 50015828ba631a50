"""The test suite's own layout: no module under tests/ imports from another test module.

What several test modules share lives in `tests.support` (builders, sample data, the workspace
harness) or `tests.fakes` (stand-ins for outside services), or is a conftest fixture; so a test
file can be moved, renamed or deleted without breaking another. Every import is read with `ast`,
relative ones resolved against the importing module's package.
"""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
SHARED = ("tests.support", "tests.fakes")


def module_name(path: Path) -> str:
    parts = path.relative_to(TESTS.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(source: str, module: str, is_package: bool) -> list[tuple[int, str]]:
    """Each module an import names, with its line; a relative import is resolved against the
    package of `module`."""
    package = (module if is_package else module.rpartition(".")[0]).split(".")
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            target = ".".join([*base, *([node.module] if node.module else [])])
            if node.module is None or target == "tests":
                # `from . import x` or `from tests import x`: x is the module imported.
                found += [(node.lineno, f"{target}.{alias.name}") for alias in node.names]
            else:
                found.append((node.lineno, target))
    return found


def is_allowed(target: str) -> bool:
    if target != "tests" and not target.startswith("tests."):
        return True  # memoryd, the standard library, third parties
    if any(target == shared or target.startswith(shared + ".") for shared in SHARED):
        return True
    return target.rpartition(".")[2] == "conftest"


def offences(path: Path) -> list[str]:
    module = module_name(path)
    source = path.read_text(encoding="utf-8")
    return [
        f"{path.relative_to(TESTS.parent)}:{line} imports {target}"
        for line, target in imported_modules(source, module, path.name == "__init__.py")
        if not is_allowed(target)
    ]


def test_no_test_module_imports_from_another_test_module() -> None:
    found = [offence for path in sorted(TESTS.rglob("*.py")) for offence in offences(path)]
    assert found == [], "move what is shared into tests/support:\n" + "\n".join(found)


def test_the_check_reads_every_kind_of_import() -> None:
    source = "\n".join(
        [
            "from tests.unit.store.test_git import git",
            "import tests.integration.harness",
            "from .test_source_incremental import stamp",
            "from . import test_other",
            "from tests import shared_samples",
            "from tests.support.harness import Workspace",
            "from tests.fakes.fake_anthropic import ToolUse",
            "from .conftest import TODAY",
            "from tests.unit.store.conftest import DirTransaction",
            "from memoryd.errors import EXIT_OK",
            "import json",
        ]
    )
    targets = imported_modules(source, "tests.unit.sources.test_x", is_package=False)
    refused = [target for _line, target in targets if not is_allowed(target)]
    assert refused == [
        "tests.unit.store.test_git",
        "tests.integration.harness",
        "tests.unit.sources.test_source_incremental",
        "tests.unit.sources.test_other",
        "tests.shared_samples",
    ]
    assert len(targets) == 11


def test_the_check_sees_the_suite() -> None:
    names = {module_name(path) for path in TESTS.rglob("*.py")}
    assert {"tests.support", "tests.fakes", "tests.unit.test_test_layout"} <= names
    this = Path(__file__)
    here = imported_modules(this.read_text(encoding="utf-8"), module_name(this), False)
    assert [target for _line, target in here] == ["__future__", "ast", "pathlib"]
