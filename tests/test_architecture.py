"""Keep the architecture true: layers import only downwards, the module map is complete,
response formulas live in the response-model layer, every public name is exported."""

import ast
import re
from pathlib import Path

import pytest

import benchmirt_bayes

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "benchmirt_bayes"

# Each layer may import itself and the layers listed for it, nothing else of the package.
# Top-level modules are their own small layers.
FOUNDATION = {"errors", "checks", "dims", "rotations", "integrity", "summaries"}
ALLOWED: dict[str, set[str]] = {
    "errors": set(),
    "checks": set(),
    "dims": set(),
    "rotations": set(),
    "integrity": set(),
    "summaries": set(),
    "response_types": {"dims"},
    "data": {"errors", "checks", "dims", "response_types"},
    "model": {"errors", "checks", "dims", "response_types", "data", "rotations"},
    "simulation": {"errors", "checks", "dims", "response_types", "data", "model"},
    "posterior": {"errors", "dims", "response_types", "data", "model"},
    "draws": {"errors", "dims", "response_types", "data", "model", "posterior"},
    "io": {"errors", "integrity", "dims", "response_types", "data", "posterior"},
    "batch": {"errors", "integrity"},
    "inference": {
        "errors",
        "checks",
        "rotations",
        "dims",
        "response_types",
        "data",
        "model",
        "simulation",
        "posterior",
        "batch",
    },
    "diagnostics": {
        "errors",
        "checks",
        "rotations",
        "summaries",
        "dims",
        "response_types",
        "data",
        "model",
        "posterior",
    },
    "analyses": {
        "errors",
        "checks",
        "integrity",
        "rotations",
        "summaries",
        "dims",
        "response_types",
        "data",
        "model",
        "posterior",
        "draws",
        "batch",
    },
    "workflows": {
        "errors",
        "checks",
        "summaries",
        "dims",
        "response_types",
        "data",
        "model",
        "posterior",
        "batch",
        "inference",
        "diagnostics",
        "analyses",
    },
    "reports": {
        "errors",
        "checks",
        "summaries",
        "dims",
        "response_types",
        "data",
        "model",
        "posterior",
        "draws",
        "diagnostics",
        "analyses",
    },
    "demo": {"simulation", "inference", "io", "reports"},
    "cli": {
        "errors",
        "checks",
        "dims",
        "integrity",
        "summaries",
        "response_types",
        "data",
        "model",
        "simulation",
        "posterior",
        "draws",
        "io",
        "batch",
        "inference",
        "diagnostics",
        "analyses",
        "workflows",
        "reports",
        "demo",
    },
}


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def _layer(path: Path) -> str:
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    return parts[0]


def _package_imports(path: Path) -> list[str]:
    """Top-level package parts (``benchmirt_bayes.<part>``) a module imports, lazily or not."""
    tree = ast.parse(path.read_text())
    found = []
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.ImportFrom):
            if node.level:
                raise AssertionError(f"{path.name}: relative import; use absolute benchmirt_bayes imports")
            names = [node.module or ""]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        for name in names:
            parts = name.split(".")
            if parts[0] == "benchmirt_bayes" and len(parts) > 1:
                found.append(parts[1])
    return found


def test_layers_import_only_what_they_may():
    problems = []
    for path in _modules():
        if path.name == "__init__.py" and path.parent == PACKAGE:
            continue  # the public API gathers every layer
        layer = _layer(path)
        assert layer in ALLOWED, f"{path.relative_to(ROOT)} is in no known layer; add it to ALLOWED"
        for imported in _package_imports(path):
            if imported != layer and imported not in ALLOWED[layer]:
                problems.append(f"{path.relative_to(ROOT)} ({layer}) imports benchmirt_bayes.{imported}")
    assert not problems, "\n".join(problems)


# Inside analyses/, modules come in tiers; a module imports only modules of lower tiers, so
# the building blocks never depend on the verbs built from them (ARCHITECTURE.md).
ANALYSIS_TIERS: dict[str, int] = {
    # 0: kernels and tables that know no other analysis
    "metrics": 0,
    "laplace_sir": 0,
    "item_regression": 0,
    "score_regression": 0,
    "score_neighbours": 0,
    "score_selection": 0,
    "abilities": 0,
    "predictive": 0,
    "audit": 0,
    "items": 0,
    "item_fit": 0,
    "person_fit": 0,
    "asymptote_flags": 0,
    # 1: what is built on one kernel
    "ability_posterior": 1,
    "dif": 1,
    "miskeyed": 1,
    "study_findings": 1,
    # 2: the scorers of new LLMs and what reads them
    "scoring": 2,
    "score_link": 2,
    "selection": 2,
    "heldout": 2,
    # 3: verbs over other verbs' results
    "comparison": 3,
    "score_estimation": 3,
    "asymptote_choice": 3,
}


def test_analyses_import_only_lower_tiers():
    modules = sorted((PACKAGE / "analyses").glob("*.py"))
    problems = []
    for path in modules:
        if path.name == "__init__.py":
            continue
        name = path.stem
        assert name in ANALYSIS_TIERS, f"analyses/{path.name} has no tier; add it to ANALYSIS_TIERS"
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                "benchmirt_bayes.analyses."
            ):
                other = node.module.split(".")[2]
                if ANALYSIS_TIERS[other] >= ANALYSIS_TIERS[name]:
                    problems.append(
                        f"analyses/{name} (tier {ANALYSIS_TIERS[name]}) imports {other} "
                        f"(tier {ANALYSIS_TIERS[other]})"
                    )
    assert not problems, "\n".join(problems)
    text = (ROOT / "ARCHITECTURE.md").read_text()
    for name, tier in ANALYSIS_TIERS.items():
        assert f"`{name}` ({tier})" in text, f"ARCHITECTURE.md does not give analyses/{name}'s tier {tier}"


def test_the_layer_check_would_catch_an_analysis_importing_the_fitting_machinery(tmp_path):
    offender = tmp_path / "offender.py"
    offender.write_text("def f():\n    from benchmirt_bayes.inference.fit import fit_posterior\n")
    imported = _package_imports(offender)
    assert imported == ["inference"] and "inference" not in ALLOWED["analyses"]
    assert "inference" not in ALLOWED["diagnostics"] and "inference" not in ALLOWED["reports"]


def test_every_module_is_in_the_module_map():
    text = (ROOT / "ARCHITECTURE.md").read_text()
    missing = []
    for path in _modules():
        if path.name == "__init__.py":
            continue
        name = path.relative_to(PACKAGE).as_posix()
        if f"`{name}`" not in text:
            missing.append(name)
    assert not missing, f"modules missing from ARCHITECTURE.md's module map: {missing}"


# a response probability, a log-likelihood or an item summary written by hand (a library's
# logistic such as ``jax.nn.sigmoid`` counts; a call of the package's own ``sigmoid``/``softplus``
# from ``response_types.base`` does not)
RESPONSE_FORMULAS = re.compile(
    r"expit\(|\.sigmoid\(|1(\.0)? */ *\(1(\.0)? *\+ *\w*\.?exp\(|logaddexp|\.softplus\(|"
    r"np\.linalg\.norm\(|\* *\(1(\.0)? *- *prob|\(\s*loading\s*\*\*\s*2\s*\)\.sum"
)
FORMULA_HOMES = "response_types/"


def _code_lines_matching(pattern: re.Pattern, homes: tuple[str, ...]) -> list[str]:
    """``module:line: code`` of every code line (not a comment or docstring) outside ``homes``."""
    offenders = []
    for path in _modules():
        name = path.relative_to(PACKAGE).as_posix()
        if name.startswith(homes):
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            code = line.split("#", 1)[0]
            if pattern.search(code) and not code.strip().startswith(('"', "``", "'")):
                offenders.append(f"{name}:{number}: {line.strip()}")
    return offenders


def test_response_formulas_live_only_in_the_response_model_layer():
    offenders = _code_lines_matching(RESPONSE_FORMULAS, FORMULA_HOMES)
    assert not offenders, "\n".join(offenders)


# the logistic function and its log form are written once, in the response types' base module
# (the fused kernel keeps its own inside its numba loop); every type calls them from there
LOGISTIC = re.compile(r"expit\(|1(\.0)? */ *\(1(\.0)? *\+ *\w*\.?exp\(|logaddexp\(0|\blog1p\(\w*\.?exp\(")
LOGISTIC_HOMES = ("response_types/base.py", "response_types/fused_logit.py")


def test_the_logistic_function_is_written_once():
    offenders = _code_lines_matching(LOGISTIC, LOGISTIC_HOMES)
    assert not offenders, "\n".join(offenders)
    assert LOGISTIC.search("p = expit(eta)") and LOGISTIC.search("s = xp.log1p(xp.exp(rho))")


@pytest.mark.parametrize(
    "line",
    [
        "p = expit(eta)",
        "q = 1 / (1 + np.exp(-x))",
        "n = np.linalg.norm(a, axis=1)",
        "sd = jax.nn.softplus(rho)",
        "p = pt.sigmoid(x)",
    ],
)
def test_the_formula_check_recognises_hand_written_copies(line):
    assert RESPONSE_FORMULAS.search(line)


def test_public_api_is_importable():
    for name in benchmirt_bayes.__all__:
        assert hasattr(benchmirt_bayes, name), name


def test_one_interval_keyword_with_one_default_across_the_public_api():
    """Every public function or method with an interval takes ``ci_prob``, defaulting to ``CI_PROB``."""
    import inspect

    from benchmirt_bayes.reports import plots
    from benchmirt_bayes.summaries import CI_PROB

    public = [getattr(benchmirt_bayes, name) for name in benchmirt_bayes.__all__]
    public += [f for name, f in inspect.getmembers(plots, inspect.isfunction) if not name.startswith("_")]
    callables = []
    for obj in public:
        callables.append(obj)
        if inspect.isclass(obj):
            methods = inspect.getmembers(obj, inspect.isfunction)
            callables += [m for name, m in methods if not name.startswith("_")]
    problems, with_interval = [], 0
    for function in callables:
        try:
            parameters = inspect.signature(function).parameters
        except (TypeError, ValueError):
            continue
        name = getattr(function, "__qualname__", repr(function))
        for other in ("interval", "coverage", "hdi_prob", "credible_interval"):
            if other in parameters:
                problems.append(f"{name}({other}=...): call it ci_prob")
        if "ci_prob" in parameters:
            with_interval += 1
            if parameters["ci_prob"].default != CI_PROB:
                problems.append(f"{name}(ci_prob={parameters['ci_prob'].default!r}): default CI_PROB")
    assert not problems, problems
    assert with_interval >= 10  # the check sees the functions it is about


def test_one_per_draw_core():
    """Per-draw parameters are held by draws.PosteriorDraws alone, with the one expected information."""
    sources = {path: path.read_text() for path in _modules()}
    information = [p.name for p, text in sources.items() if "def expected_information(" in text]
    assert information == ["draws.py"], information
    for retired in ("class ItemDraws", "class CellModel", "class DrawCells", "def probabilities_for_samples"):
        assert not [p.name for p, text in sources.items() if retired in text], retired
    thinning = {
        p.relative_to(PACKAGE).as_posix()
        for p, text in sources.items()
        if re.search(r"\b(thinned_draws|type_parameters)\(", text.replace("def thinned_draws(", ""))
    }
    assert thinning <= {"posterior.py", "draws.py", "analyses/audit.py"}, thinning


# ---------------------------------------------------------------- response types as plug-ins
# Strings that happen to equal a type's name but mean something else, each with its reason;
# the test below fails when an entry is no longer needed, so the list cannot go stale.
TYPE_NAME_HOMONYMS = {
    ("analyses/heldout.py", "count"): "the calibration table's number-of-cells column",
    ("analyses/metrics.py", "count"): "the calibration table's number-of-cells column",
    ("data/harness_formats.py", "count"): "a key lm-evaluation-harness itself writes",
}


def _type_name_constants(path: Path, names: set[str]) -> set[str]:
    """The type names a module's code (docstrings aside) spells as strings, alone or as a ``name_`` prefix."""
    tree = ast.parse(path.read_text())
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                docstrings.add(id(body[0].value))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            for name in names:
                if node.value == name or node.value.startswith(f"{name}_"):
                    found.add(name)
    return found


def _files_naming_each_type() -> dict[str, set[str]]:
    from benchmirt_bayes.response_types import RESPONSE_MODELS

    names = set(RESPONSE_MODELS)
    files: dict[str, set[str]] = {name: set() for name in names}
    for path in _modules():
        relative = path.relative_to(PACKAGE).as_posix()
        for name in _type_name_constants(path, names):
            files[name].add(relative)
    for spec in sorted((ROOT / "models").glob("*.toml")):
        text = spec.read_text()
        for name in names:
            if re.search(rf"^\[{name}\]", text, flags=re.MULTILINE):
                files[name].add(f"models/{spec.name}")
    return files


def test_a_response_type_is_named_only_in_its_module_the_registry_and_the_specs():
    import inspect

    from benchmirt_bayes.response_types import RESPONSE_MODELS

    files = _files_naming_each_type()
    problems, used_homonyms = [], set()
    for name, found in files.items():
        home = Path(inspect.getfile(type(RESPONSE_MODELS[name]))).relative_to(PACKAGE).as_posix()
        for relative in sorted(found):
            if relative in (home, "response_types/__init__.py") or relative.startswith("models/"):
                continue
            if (relative, name) in TYPE_NAME_HOMONYMS:
                used_homonyms.add((relative, name))
                continue
            problems.append(f"{relative} names response type {name!r} (only {home} may)")
    assert not problems, "\n".join(problems)
    stale = set(TYPE_NAME_HOMONYMS) - used_homonyms
    assert not stale, f"TYPE_NAME_HOMONYMS entries no longer needed: {sorted(stale)}"


def test_the_type_name_check_catches_a_type_named_elsewhere(tmp_path):
    offender = tmp_path / "offender.py"
    offender.write_text(
        '"""Docstrings may say graded."""\n'
        'def f(types):\n    """Nor here: graded."""\n    return types == "graded", "continuous_precision"\n'
    )
    assert _type_name_constants(offender, {"graded", "continuous", "count"}) == {"graded", "continuous"}


def test_the_recipe_for_a_new_response_type_touches_at_most_four_files():
    """ARCHITECTURE.md's recipe lists the files a new type touches; the registry loops do the rest."""
    text = (ROOT / "ARCHITECTURE.md").read_text()
    recipe = text.split("### Adding a response type", 1)[1].split("\n#", 1)[0]
    steps = re.findall(r"^\d+\. ", recipe, flags=re.MULTILINE)
    assert 1 <= len(steps) <= 4, recipe
    files = _files_naming_each_type()
    for name, found in files.items():
        package_files = {f for f in found if not f.startswith("models/")}
        # its module and the registry line; everything else reads the registry
        assert len(package_files - {f for f, n in TYPE_NAME_HOMONYMS if n == name}) <= 2, (name, found)
