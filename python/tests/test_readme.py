"""The README's Python runs as written, from the repository's root."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_readmes_python_runs_from_the_root(monkeypatch, capsys):
    snippets = re.findall(r"^```python\n(.*?)^```$", (ROOT / "README.md").read_text(), flags=re.M | re.S)
    assert snippets, "the README shows the Python package in a ```python block"
    monkeypatch.chdir(ROOT)
    for snippet in snippets:
        exec(compile(snippet, "README.md", "exec"), {})
    printed = capsys.readouterr().out
    # The snippet prints the accuracy, the random baseline and how the rows were obtained.
    assert "proved" in printed, printed
