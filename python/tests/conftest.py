"""What the tests share: the bundled tables, the CLI built beside the package (its path from
LEAKSCOPE_CLI, else the build directory's), and a PyTorch client of the Adult sample."""
import json
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ADULT = ROOT / "data" / "adult-sample.csv"
GERMAN = ROOT / "data" / "german-credit.csv"
FIXTURES = ROOT / "tests" / "data" / "pytorch-update"


def cli_path() -> Path:
    if os.environ.get("LEAKSCOPE_CLI"):
        return Path(os.environ["LEAKSCOPE_CLI"])
    target = Path(os.environ.get("CARGO_TARGET_DIR", Path.home() / ".cache" / "leakscope" / "target"))
    return target / "debug" / "leakscope"


@pytest.fixture(scope="session")
def cli():
    path = cli_path()
    if not path.exists():
        pytest.fail(f"the leakscope CLI is not built at {path}: run cargo build, or set LEAKSCOPE_CLI")

    def run(*args: str) -> str:
        done = subprocess.run([str(path), *args], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        return done.stdout

    return run


def read_json(path) -> dict:
    with open(path) as f:
        return json.load(f)
