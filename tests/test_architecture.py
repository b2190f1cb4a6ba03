"""The architecture of probanon/ (issue 41), read from the source with ast (imports inside
functions included, as they run as soon as the function does):

- no import cycle;
- the layers of DEVELOPERS.md import one way: a module never imports one of a higher layer;
- only probanon/cli/ imports argparse or probanon.cli, prints (print, sys.stdout, sys.stderr,
  tqdm), or reads parsed arguments (``args.NAME``);
- no module longer than MAX_LINES lines unless listed, with its reason, in LONG.
"""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "probanon"

#: the floors, bottom up (DEVELOPERS.md, "Layers"): the top-level modules of probanon/ are the
#: core (0) unless named here; a package's modules take its floor
LAYERS = {
    "microagg": 1,
    "metrics": 2, "attacks": 2, "survey": 2, "swapping": 2, "diversity": 2, "setvalued": 2, "datasets": 2,
    "categorical": 2, "perturbation": 2,
    "probanon.release_report": 2,  # the reports run the attack suite (attacks) on a release
    "service": 3, "distributed": 3, "reproduce": 3, "workbench": 3,
    "cli": 4,
}

MAX_LINES = 600

#: modules allowed above MAX_LINES lines, each with the reason it is one module
LONG = {
    # the reproductions: one module per paper, its tables and figures in the paper's order
    "probanon.reproduce.surveys": 1000, "probanon.reproduce.swapping": 800, "probanon.reproduce.diversity": 620,
    # one numba kernel family each: the local search of PCL (paper 3) and the sharded KM of paper 5 on Dask
    "probanon.microagg.local_search": 950, "probanon.distributed.km": 850,
    # Algorithm 1 of paper 4 (planning) and the generalisation of paper 5, each one algorithm with its checks
    "probanon.diversity.planning": 720, "probanon.setvalued.generalize": 680,
}


def layer(module: str) -> int:
    parts = module.split(".")
    if module in LAYERS:
        return LAYERS[module]
    return LAYERS.get(parts[1], 0) if len(parts) > 2 or (len(parts) == 2 and parts[1] in LAYERS) else 0


def modules() -> dict:
    """{module name: (path, is a package)} of every module of probanon."""
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        package = parts[-1] == "__init__"
        out[".".join(parts[:-1] if package else parts)] = (path, package)
    return out


def imported(name: str, package: bool, node, known) -> set:
    """The probanon modules an import statement of module ``name`` loads."""
    if isinstance(node, ast.Import):
        targets = [a.name for a in node.names]
    else:
        if node.level:
            base = name.split(".") if package else name.split(".")[:-1]
            base = base[:len(base) - node.level + 1]
            source = ".".join(base + ([node.module] if node.module else []))
        else:
            source = node.module or ""
        targets = [f"{source}.{a.name}" if f"{source}.{a.name}" in known else source for a in node.names]
    out = set()
    for target in targets:
        while target not in known and "." in target:
            target = target.rsplit(".", 1)[0]
        if target in known and target != name:
            out.add(target)
    return out


def import_graph() -> dict:
    known = modules()
    return {name: set().union(*(imported(name, package, node, known) for node in ast.walk(ast.parse(path.read_text()))
                                if isinstance(node, (ast.Import, ast.ImportFrom))))
            for name, (path, package) in known.items()}


def cycles(graph: dict) -> list:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index, low, on, stack, found, counter = {}, {}, set(), [], [], [0]
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            v, children = work[-1]
            for w in children:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    component = set()
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        component.add(w)
                        if w == v:
                            break
                    if len(component) > 1:
                        found.append(component)
    return found


def test_the_cycle_finder_finds_a_cycle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert cycles(graph) == [{"a", "b", "c"}]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle():
    assert cycles(import_graph()) == []


def test_the_layers_import_one_way():
    """A module never imports one of a higher floor (LAYERS): the command line on top, then the
    service, Dask and the reproductions, then the methods of the papers with the attacks and
    metrics, then microaggregation, then the core modules."""
    assert layer("probanon.cli.main") == 4 and layer("probanon.data") == 0 and layer("probanon.microagg") == 1
    assert layer("probanon.release_report") == 2 and layer("probanon.survey.spec") == 2
    upward = [f"{m} -> {t}" for m, targets in import_graph().items() for t in targets if layer(t) > layer(m)]
    assert not upward, upward


def _library():
    """(module name, parsed tree) of every module outside probanon/cli/."""
    for name, (path, _) in modules().items():
        if not name.startswith("probanon.cli"):
            yield name, ast.parse(path.read_text())


def test_only_the_command_line_imports_argparse_or_the_command_line():
    found = []
    for name, tree in _library():
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                found += [f"{name}: import {a.name}" for a in node.names
                          if a.name == "argparse" or a.name.startswith("probanon.cli")]
            elif isinstance(node, ast.ImportFrom) and node.module and (
                    node.module == "argparse" or (node.level == 0 and node.module.startswith("probanon.cli"))
                    or (node.level and node.module.split(".")[0] == "cli")):
                found.append(f"{name}: from {node.module}")
    assert not found, found


def _prints_or_reads_arguments(name: str, tree) -> list:
    """Where module ``name`` prints (print, sys.stdout or sys.stderr, tqdm) or reads ``args.NAME``."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print":
            found.append(f"{name}:{node.lineno}: print")
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "args":
            found.append(f"{name}:{node.lineno}: args.{node.attr}")
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "sys" \
                and node.attr in ("stdout", "stderr"):
            found.append(f"{name}:{node.lineno}: sys.{node.attr}")
        if isinstance(node, ast.Import):
            found += [f"{name}:{node.lineno}: import {a.name}" for a in node.names if a.name.split(".")[0] == "tqdm"]
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "tqdm":
            found.append(f"{name}:{node.lineno}: from {node.module}")
    return found


def test_the_library_neither_prints_nor_reads_parsed_arguments():
    """print(...), sys.stdout and sys.stderr (their write, or print's file), tqdm and reads of
    ``args.NAME`` (an argparse Namespace) only under probanon/cli/: progress goes through a
    callback, soft findings through warnings (issue 41.5)."""
    found = [where for name, tree in _library() for where in _prints_or_reads_arguments(name, tree)]
    assert not found, found


def test_no_module_above_the_agreed_size_unless_listed():
    sizes = {name: len(path.read_text().splitlines()) for name, (path, _) in modules().items()}
    over = {name: n for name, n in sizes.items() if n > LONG.get(name, MAX_LINES)}
    assert not over, f"modules above {MAX_LINES} lines (split them, or list them in LONG with the reason): {over}"
    assert all(sizes.get(name, 0) > MAX_LINES for name in LONG), "a module of LONG is short again: take it off"


def test_the_checks_find_what_they_look_for():
    """Each check fails on a module that breaks its rule (a graph, a tree made up here)."""
    assert cycles({"a": {"b"}, "b": {"a"}}) == [{"a", "b"}]
    assert layer("probanon.service.app") > layer("probanon.survey.spec")
    printing = ("print(args.keys)", "sys.stderr.write('x')", "sys.stdout.write('x')", "f(file=sys.stderr)",
                "from tqdm import tqdm", "import tqdm.auto")
    assert all(_prints_or_reads_arguments("m", ast.parse(source)) for source in printing)
    assert _prints_or_reads_arguments("m", ast.parse("import sys\nwarnings.warn('x')\nsys.exit(0)\n")) == []
    tree = ast.parse("import argparse\nprint(args.keys)\n")
    assert any(isinstance(n, ast.Import) and n.names[0].name == "argparse" for n in ast.walk(tree))
    assert any(isinstance(n, ast.Attribute) and n.value.id == "args" for n in ast.walk(tree)
               if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name))


def test_the_broken_cycles_stay_broken():
    """Issue 41: table_format lives in formats.py, SMOOTH_MIN_K in microagg/memory.py, LevelReport in
    setvalued/levels.py, group means (and the missing-value means) in microagg/means.py, the quiet
    progress callback in progress.py, so these pairs no longer import each other."""
    graph = import_graph()
    for a, b in (("probanon.labelled", "probanon.outputs"), ("probanon.microagg.memory", "probanon.microagg.pcl"),
                 ("probanon.setvalued.cuts", "probanon.setvalued.generalize"),
                 ("probanon.microagg.base", "probanon.microagg.blocks"),
                 ("probanon.microagg.base", "probanon.microagg.missing"),
                 ("probanon.microagg.base", "probanon.microagg.settle"),
                 ("probanon.microagg.missing", "probanon.microagg.mixed")):
        assert not (b in graph[a] and a in graph[b]), (a, b)
