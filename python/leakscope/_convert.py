"""What Python callers hold, as the engine reads it: tables as CSV bytes, options as the npm
package's JSON (camelCase), arrays as numpy archives, progress as a callback. Only conversion
lives here; every default, limit and check is the engine's."""
from __future__ import annotations

import io
import json
import os
import re
from typing import Any, Callable, Dict, Mapping, Optional, Sequence, Union

import numpy as np

from . import _native

Progress = Dict[str, Any]
ProgressArg = Union[None, bool, Callable[[Progress], Optional[bool]]]


def _is_path(value: Any) -> bool:
    return isinstance(value, (str, os.PathLike))


def _file_bytes(value: Any) -> Optional[bytes]:
    """A file given as its bytes or its path, as bytes; None for anything else."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    if _is_path(value):
        with open(value, "rb") as f:
            data: bytes = f.read()
        return data
    return None


def table_bytes(table: Any) -> bytes:
    """A CSV path, CSV bytes or a pandas DataFrame (its index left out) as CSV bytes."""
    data = _file_bytes(table)
    if data is not None:
        return data
    if hasattr(table, "to_csv") and hasattr(table, "columns"):
        text: str = table.to_csv(index=False)
        return text.encode("utf-8")
    raise TypeError(
        f"a table is a CSV path, CSV bytes or a pandas DataFrame, not {type(table).__name__}"
    )


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


def snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])([A-Z])", lambda m: "_" + m.group(1).lower(), name)


def options_json(options: Mapping[str, Any]) -> str:
    """Keyword options (snake_case) as the engine's options object; None means "leave out"."""
    return json.dumps({camel(k): v for k, v in options.items() if v is not None})


def snake_keys(obj: Mapping[str, Any]) -> Dict[str, Any]:
    return {snake(k): v for k, v in obj.items()}


def engine_message(error: Exception) -> str:
    """The engine's message with option names as Python spells them (`batchSize` → `batch_size`)."""
    return re.sub(r"`([a-z]+[A-Za-z0-9]*)`", lambda m: f"`{snake(m.group(1))}`", str(error))


def call(fn: Callable[..., str], *args: Any, **kwargs: Any) -> Any:
    """Call the engine and read its JSON answer; its errors keep their class, in Python's terms."""
    try:
        return json.loads(fn(*args, **kwargs))
    except _native.LeakscopeError as e:
        raise type(e)(engine_message(e)) from None


def _arrays(value: Any) -> Union[Dict[str, np.ndarray], Sequence[np.ndarray]]:
    def array(a: Any) -> np.ndarray:
        if hasattr(a, "detach"):  # a torch tensor
            a = a.detach().cpu().numpy()
        elif hasattr(a, "numpy") and not isinstance(a, np.ndarray):  # a Flower Array
            a = a.numpy()
        return np.asarray(a)

    if isinstance(value, Mapping):
        return {str(k): array(v) for k, v in value.items()}
    return [array(v) for v in value]


def update_bytes(value: Any) -> Optional[bytes]:
    """A file (path or its bytes) as is; a dict of arrays by name, or a list of arrays in
    state_dict order, as the numpy archive `numpy.savez` writes (the engine reads both)."""
    if value is None:
        return None
    data = _file_bytes(value)
    if data is not None:
        return data
    arrays = _arrays(value)
    out = io.BytesIO()
    if isinstance(arrays, dict):
        np.savez(out, **arrays)  # type: ignore[arg-type]  # numpy's stub reads **kwds as allow_pickle
    else:
        np.savez(out, *arrays)
    return out.getvalue()


def encoding_json(encoding: Any) -> str:
    """An encoding as a dict, JSON text, or the path of the file `leakscope encoding` writes."""
    if isinstance(encoding, Mapping):
        return json.dumps(encoding)
    if isinstance(encoding, (bytes, bytearray)):
        return bytes(encoding).decode("utf-8")
    if isinstance(encoding, str) and encoding.lstrip().startswith("{"):
        return encoding
    if _is_path(encoding):
        with open(encoding, encoding="utf-8") as f:
            return f.read()
    raise TypeError(f"an encoding is a dict, JSON text or a path, not {type(encoding).__name__}")


class Reporter:
    """The progress callback the engine calls: the caller's, or a tqdm bar where tqdm is
    installed and progress was not turned off. The engine checks Ctrl-C at every report."""

    def __init__(self, progress: ProgressArg) -> None:
        self.callback: Optional[Callable[[Progress], Optional[bool]]] = None
        self.bar: Any = None
        if callable(progress):
            self.callback = progress
        elif progress is None or progress is True:
            try:
                from tqdm.auto import tqdm  # type: ignore[import-untyped]
            except ImportError:
                tqdm = None
            if tqdm is not None:
                self.bar = tqdm(total=0, unit="step", leave=False)

    def __call__(self, p: Progress) -> Optional[bool]:
        if self.bar is not None:
            if self.bar.total != p["of"]:
                self.bar.reset(total=p["of"])
            self.bar.set_description(p["phase"], refresh=False)
            self.bar.n = p["step"]
            self.bar.refresh()
        if self.callback is not None:
            return self.callback(p)
        return True

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
