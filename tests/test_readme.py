"""The README's Python snippets run as written, in order, in one namespace (no undefined names)."""

import re
from pathlib import Path

import matplotlib
import pytest

README = Path(__file__).resolve().parent.parent / "README.md"
NOT_RUN = "# your own files"


def readme_blocks() -> list[str]:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    return [b for b in blocks if not b.startswith(NOT_RUN)]


def test_readme_has_runnable_snippets_and_marks_the_others():
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert len(readme_blocks()) >= 7
    assert all(b.startswith(NOT_RUN) for b in blocks if "load_responses(" in b and '.csv"' in b)


def test_readme_is_a_users_guide_of_at_most_12_kb():
    text = README.read_text()
    assert len(text.encode()) <= 12 * 1024
    dated = [line for line in text.splitlines() if re.search(r"\b20\d\d-\d\d-\d\d\b", line)]
    assert len(dated) <= 1, f"dated run logs belong in benchmarks/RESULTS.md: {dated}"  # the speed stamp


@pytest.mark.slow
def test_readme_snippets_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    backend = matplotlib.get_backend()
    matplotlib.use("Agg")
    namespace: dict = {}
    try:
        for number, block in enumerate(readme_blocks(), 1):
            try:
                exec(compile(block, f"README block {number}", "exec"), namespace)
            except Exception as error:  # name the block that failed
                raise AssertionError(f"README block {number} failed:\n{block}") from error
    finally:
        matplotlib.use(backend)
