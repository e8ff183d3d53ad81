"""The package's layers point one way, and no module imports itself back through others.

Every ``import`` and ``from … import`` of the source is read (those inside functions too: a deferred import
is still a dependency), resolved to the module it names, and checked against the layers below, lowest first.
A module may import its own layer and the layers below it; a built-in theory (``attnverify.theories.<name>``)
may import the layers below it and its own package, never another theory; nothing below imports a theory.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SOURCE = Path(__file__).resolve().parents[1] / "src"

#: The layers, lowest first: (name, module prefixes).
LAYERS = (
    ("base", ("attnverify.base",)),
    ("derivations", ("attnverify.derivations",)),
    ("numerics", ("attnverify.numerics",)),
    ("execution", ("attnverify.execution",)),
    ("checks", ("attnverify.checks",)),
    ("report", ("attnverify.report",)),
    ("theory form", ("attnverify.theory_form", "attnverify.saddle")),
    ("theories", ("attnverify.theories.",)),  # one package per theory: attnverify.theories.<name>.…
    ("registry", ("attnverify.theories", "attnverify.run")),
    ("entry points", ("attnverify.cli", "attnverify.commands", "attnverify.pytest_plugin", "attnverify.progress", "attnverify.__main__",
                      "attnverify")),
)


def modules() -> dict[str, tuple[Path, bool]]:
    """Every module of the package: name -> (file, is a package)."""
    found = {}
    for path in (SOURCE / "attnverify").rglob("*.py"):
        parts = list(path.relative_to(SOURCE).with_suffix("").parts)
        package = parts[-1] == "__init__"
        found[".".join(parts[:-1] if package else parts)] = (path, package)
    return found


def imports(name: str, path: Path, package: bool, known: dict) -> set[str]:
    """The package's modules that ``name`` imports (a name imported from a package counts as its submodule
    when there is one, else as the package)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.split(".")[0] == "attnverify"}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = name.split(".") if package else name.split(".")[:-1]
                parts = parts[: len(parts) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            if base.split(".")[0] != "attnverify":
                continue
            for alias in node.names:
                found.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base)
    return {m for m in found if m in known and m != name}


def layer(module: str) -> int:
    """The index of the layer ``module`` belongs to (the longest matching prefix decides)."""
    best, index = -1, None
    for i, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            hit = module.startswith(prefix) if prefix.endswith(".") else (module == prefix or module.startswith(prefix + "."))
            if hit and len(prefix) > best:
                best, index = len(prefix), i
    if module in ("attnverify.theories", "attnverify.theories.catalogue"):
        return 8  # the registry of theories sits above the theories it lists
    assert index is not None, f"{module} belongs to no layer: add it to LAYERS"
    return index


def theory_package(module: str) -> str | None:
    """``attnverify.theories.<name>`` for a module of a built-in theory, else None."""
    parts = module.split(".")
    if len(parts) >= 3 and parts[:2] == ["attnverify", "theories"] and layer(module) == 7:
        return ".".join(parts[:3])
    return None


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imports(name, path, package, known) for name, (path, package) in known.items()}


def test_every_module_belongs_to_a_layer(graph):
    for name in graph:
        layer(name)


def test_no_import_points_up_a_layer_or_into_another_theory(graph):
    wrong = []
    for name, targets in sorted(graph.items()):
        for target in sorted(targets):
            if layer(target) > layer(name):
                wrong.append(f"{name} ({LAYERS[layer(name)][0]}) imports {target} ({LAYERS[layer(target)][0]})")
            elif theory_package(name) and theory_package(target) and theory_package(name) != theory_package(target):
                wrong.append(f"{name} imports {target}, of another theory")
    assert not wrong, "imports against the layers:\n" + "\n".join(wrong)


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import circles: strongly connected components of more than one module (Tarjan's algorithm)."""
    index, low, stack, on_stack, found, counter = {}, {}, [], set(), [], [0]

    def visit(node: str) -> None:
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for target in graph.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
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

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_circle(graph):
    assert circles(graph) == []


def test_the_circle_finder_finds_a_circle():
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_the_layer_check_sees_an_upward_import():
    assert layer("attnverify.numerics.hmc") < layer("attnverify.run.report")
    assert layer("attnverify.theories.single_location.claims") == 7
    assert layer("attnverify.theories") == 8
    assert theory_package("attnverify.theories.attention_paths.derivations.action") == "attnverify.theories.attention_paths"


def test_the_report_layer_only_renders(graph):
    """The report prints what a run gives it: no module of ``attnverify.report`` runs tasks or claims, keeps a
    run's checks or decides its exit status (``attnverify.run`` does)."""
    running = {"attnverify.execution.scheduler", "attnverify.execution.cluster", "attnverify.checks.saved"}
    wrong = [f"{name} imports {target}" for name, targets in sorted(graph.items())
             if name.startswith("attnverify.report") for target in sorted(targets & running)]
    for path in (SOURCE / "attnverify" / "report").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([alias.name for alias in node.names] if isinstance(node, ast.ImportFrom)
                     else [node.name] if isinstance(node, ast.FunctionDef) else [])
            wrong += [f"{path.name}: {name}" for name in names
                      if name in ("run_claim", "evaluate", "run_tasks", "exit_status", "run_claim_or_error")]
    assert not wrong, "run logic in the report layer:\n" + "\n".join(wrong)


#: Inside a theory's package, lowest first: its Theory object (``theory.py``), its derivations, its simulators
#: (every other module), its experiments, its claims, its section. A section draws what experiments computed; claims
#: never import it.
ROLES = ("theory", "derivations", "simulators", "experiments", "claims", "section")


def role(module: str) -> int:
    """The index in :data:`ROLES` of a module of a theory's package (by its first name below the package)."""
    part = module.split(".")[3] if len(module.split(".")) > 3 else ""
    if part == "theory":
        return 0
    for index, suffix in ((1, "derivations"), (3, "experiments"), (4, "claims"), (5, "section")):
        if part == suffix or part.endswith("_" + suffix):
            return index
    return 2


def test_inside_a_theory_derivations_simulators_experiments_claims_section_point_down(graph):
    wrong = [f"{name} ({ROLES[role(name)]}) imports {target} ({ROLES[role(target)]})"
             for name, targets in sorted(graph.items()) if theory_package(name)
             for target in sorted(targets) if theory_package(target) == theory_package(name) and role(target) > role(name)]
    assert not wrong, "imports against the order inside a theory:\n" + "\n".join(wrong)


def test_one_fingerprint_for_every_cache():
    """The on-disk caches (experiments, checks, saddle-point solutions, derivations, derivation steps) and
    the files they are keyed by share one fingerprint, :func:`attnverify.base.files.fingerprint`: no other module
    hashes."""
    hashing = [str(path.relative_to(SOURCE)) for path in (SOURCE / "attnverify").rglob("*.py")
               if "hashlib.sha256" in path.read_text() and path.name != "files.py"]
    assert hashing == []
    from attnverify.base.files import fingerprint

    assert fingerprint("ab", "c") != fingerprint("a", "bc") and fingerprint(b"x") != fingerprint("x")
    assert fingerprint([1.0, 2.0]) != fingerprint([[1.0, 2.0]]) and len(fingerprint()) == 24


def test_one_name_per_thing():
    """No two public classes of the package share a name (a reader meets one WidthSweep, one Theory, one Task)."""
    classes: dict[str, list[str]] = {}
    for path in (SOURCE / "attnverify").rglob("*.py"):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                classes.setdefault(node.name, []).append(str(path.relative_to(SOURCE)))
    assert {name: where for name, where in classes.items() if len(where) > 1} == {}


def test_each_builtin_theory_is_one_package_in_the_concise_form():
    """A built-in theory is the concise Theory of attnverify.theories.<name>.theory, loaded through its section
    module as a user's file is: every claim, derivation, the experiments' plan and the section are registered on it,
    and every one of them was defined in a module of that package."""
    import importlib
    import inspect

    from attnverify.theories import BUILTIN_NAMES, builtin_theory, concise
    from attnverify.theories.catalogue import claims_in_module

    for name in BUILTIN_NAMES:
        section = importlib.import_module(f"attnverify.theories.{name}.section")
        form = concise(section)
        assert form is builtin_theory(name) and form.name == name and form.builtin
        assert form.plans_experiments and form._section is not None
        assert form.file.endswith(f"attnverify/theories/{name}/theory.py")
        package = f"attnverify.theories.{name}."
        defined = [inspect.unwrap(c.check) for c in form.claims] + [d.function for d in form.derivations] + [form._plan, form._section]
        for function in defined:
            where = getattr(function, "__module__", None) or inspect.getmodule(function).__name__
            # the saddle-point engine generates a declared action's derivation, for a user's theory as for this one
            generated = where == "attnverify.saddle.claims" and function.__qualname__.startswith("action_derivation.")
            assert where.startswith(package) or generated, (name, function, where)
        # no claim outside the Theory: the section module's claims are the theory's, then its derivation_steps
        assert [c.name for c in claims_in_module(section)] + [f"{name}.derivation_steps"] == \
            [c.name for c in form.claim_list()]
        assert all(c.origin == "" for c in form.claim_list())  # replayed by name: check --only


def test_private_names_stay_in_their_module():
    """No module imports another module's private name (``_name``): what two modules share is public there, with a
    docstring saying what it guarantees (aliasing a public name to a private one, ``import x as _x``, is allowed)."""
    crossing = []
    for name, (path, package) in modules().items():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith("attnverify")):
                crossing += [f"{name}:{node.lineno} imports {alias.name} from {'.' * node.level}{node.module or ''}"
                             for alias in node.names if alias.name.startswith("_") and not alias.name.startswith("__")]
    assert crossing == []
