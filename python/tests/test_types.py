"""The package's type information (py.typed, the engine's stubs) checks a caller's code under
mypy --strict, and a misuse is caught."""
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent


def mypy(*target: str) -> subprocess.CompletedProcess:
    pytest.importorskip("mypy")
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--follow-imports=silent", *target],
        capture_output=True, text=True, cwd=HERE,
    )


def test_a_callers_code_type_checks():
    done = mypy(str(HERE / "typed_usage.py"))
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_package_itself_type_checks():
    done = mypy("-p", "leakscope")
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_misuse_is_caught(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import leakscope\nx: int = leakscope.attack('t.csv', label='salary')\n")
    done = mypy(str(bad))
    assert done.returncode != 0 and "incompatible types in assignment" in done.stdout.lower(), done.stdout
