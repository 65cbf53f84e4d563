"""Keep ARCHITECTURE.md honest: every module is in its map, every public name is exported."""

from pathlib import Path

import benchmirt_bayes

ROOT = Path(__file__).resolve().parent.parent


def test_every_module_is_in_the_module_map():
    text = (ROOT / "ARCHITECTURE.md").read_text()
    modules = [p.name for p in (ROOT / "benchmirt_bayes").glob("*.py") if p.name != "__init__.py"]
    missing = [m for m in modules if f"`{m}`" not in text]
    assert not missing, f"modules missing from ARCHITECTURE.md: {missing}"


def test_public_api_is_importable():
    for name in benchmirt_bayes.__all__:
        assert hasattr(benchmirt_bayes, name), name
