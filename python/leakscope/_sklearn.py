"""Encodings of a client's own preprocessing: a fitted scikit-learn ColumnTransformer, or the frame
pandas.get_dummies made, read (never unpickled) into the leakscope-encoding/1 dict the engine
reads, so that a server's attack and `leakscope.encode` see the inputs the client's network sees.

scikit-learn is not imported: steps are told apart by class name (as flower.py reads torch's
optimisers), so the package needs neither it nor its missing type stubs."""
from __future__ import annotations

import math
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

SUPPORTED = (
    "OneHotEncoder, OrdinalEncoder, StandardScaler, MinMaxScaler, MaxAbsScaler, RobustScaler, "
    "SimpleImputer, FunctionTransformer without func, 'passthrough' and 'drop', alone or as a "
    "Pipeline (imputers, then an encoder or a scaler, then scalers)"
)
ENCODERS = ("OneHotEncoder", "OrdinalEncoder")
SCALERS = ("StandardScaler", "MinMaxScaler", "MaxAbsScaler", "RobustScaler")


class _Block:
    """One table column's outputs: its kind, its coding, and per output the affine map from the
    column's value (the one-hot 0/1, the ordinal code or the number) to what the network sees:
    (value − mean) / std. `bounds` holds, per output, the range a clipping MinMaxScaler leaves
    unchanged, in those same value units."""

    def __init__(self, column: str, width: int, categories: Optional[List[Any]] = None, coding: str = "one_hot", drop: Optional[int] = None) -> None:
        self.column = column
        self.categories = categories
        self.coding = coding
        self.drop = drop
        self.mean = [0.0] * width
        self.std = [1.0] * width
        self.bounds: List[Tuple[float, float]] = [(-math.inf, math.inf)] * width


def _name(step: Any) -> str:
    return step if isinstance(step, str) else type(step).__name__


def _refuse(where: str, step: Any, why: str = "") -> ValueError:
    return ValueError(f"encoding_from_sklearn: {where} is {_name(step)!r}{why}; leakscope reads {SUPPORTED}")


def _steps(step: Any) -> List[Any]:
    """A step as the list of the estimators it chains (nested Pipelines flattened, skipped
    steps left out)."""
    if type(step).__name__ == "Pipeline":
        return [s for _, inner in step.steps for s in _steps(inner)]
    return [] if step is None or step == "passthrough" else [step]


def _identity(step: Any, where: str) -> bool:
    """Whether the step leaves the table's complete rows as they are: an imputer (leakscope drops
    incomplete rows), FunctionTransformer without func."""
    name = type(step).__name__
    if name == "SimpleImputer":
        if getattr(step, "add_indicator", False):
            raise _refuse(where, step, " with add_indicator=True (indicator columns)")
        return True
    return name == "FunctionTransformer" and getattr(step, "func", None) is None


def _affine(step: Any, width: int, where: str) -> Tuple[np.ndarray, np.ndarray, Optional[Tuple[np.ndarray, np.ndarray]]]:
    """A scaler as (centre, scale) per output (output = (input − centre) / scale), and the range
    a clipping MinMaxScaler was fitted on (in input units)."""
    name = type(step).__name__
    ones, zeros = np.ones(width), np.zeros(width)
    clip = None
    # The flags, not the attributes: StandardScaler keeps mean_ even with with_mean=False.
    if name == "StandardScaler":
        centre = np.asarray(step.mean_, float) if step.with_mean else zeros
        scale = np.asarray(step.scale_, float) if step.with_std else ones
    elif name == "RobustScaler":
        centre = np.asarray(step.center_, float) if step.with_centering else zeros
        scale = np.asarray(step.scale_, float) if step.with_scaling else ones
    elif name == "MaxAbsScaler":
        centre, scale = zeros, np.asarray(step.scale_, float)
    elif name == "MinMaxScaler":
        # x * scale_ + min_ = (x − (−min_ / scale_)) / (1 / scale_)
        scale = 1.0 / np.asarray(step.scale_, float)
        centre = -np.asarray(step.min_, float) * scale
        if step.clip:
            clip = (np.asarray(step.data_min_, float), np.asarray(step.data_max_, float))
    else:
        raise _refuse(where, step)
    centre, scale = np.broadcast_to(centre, (width,)), np.broadcast_to(scale, (width,))
    if getattr(step, "n_features_in_", width) != width:
        raise ValueError(f"encoding_from_sklearn: {where}: {name} takes {step.n_features_in_} inputs but is given {width}")
    if not (np.all(np.isfinite(scale)) and np.all(scale > 0) and np.all(np.isfinite(centre))):
        raise ValueError(f"encoding_from_sklearn: {where}: {name}'s scale is not a positive finite number for every input")
    return centre, scale, clip


def _compose(blocks: List[_Block], step: Any, where: str) -> None:
    """Apply a scaler to the outputs of `blocks`: ((v − c) / s − c2) / s2 = (v − (c + c2 s)) / (s s2)."""
    width = sum(len(b.mean) for b in blocks)
    centre, scale, clip = _affine(step, width, where)
    j = 0
    for b in blocks:
        for k in range(len(b.mean)):
            c, s = b.mean[k], b.std[k]
            if clip is not None:  # clipped to [lo, hi] after the maps so far: v in c + s·[lo, hi]
                lo, hi = b.bounds[k]
                b.bounds[k] = (max(lo, c + s * clip[0][j]), min(hi, c + s * clip[1][j]))
            b.mean[k], b.std[k] = c + centre[j] * s, s * scale[j]
            j += 1


def _encoder_blocks(step: Any, columns: List[str], where: str) -> List[_Block]:
    name = type(step).__name__
    if getattr(step, "_infrequent_enabled", False) and any(c is not None for c in step.infrequent_categories_):
        bad = [col for col, c in zip(columns, step.infrequent_categories_) if c is not None]
        raise ValueError(
            f"encoding_from_sklearn: {where}: {name} groups infrequent categories of {', '.join(map(repr, bad))} "
            "(min_frequency / max_categories) into one output, which an encoding cannot state; fit it without them"
        )
    if len(step.categories_) != len(columns):
        raise ValueError(f"encoding_from_sklearn: {where}: {name} was fitted on {len(step.categories_)} columns")
    if name == "OrdinalEncoder":
        return [_Block(col, 1, list(cats), "ordinal") for col, cats in zip(columns, step.categories_)]
    drops = step.drop_idx_ if step.drop_idx_ is not None else [None] * len(columns)
    return [
        _Block(col, len(cats) - (d is not None), list(cats), "one_hot", None if d is None else int(d))
        for col, cats, d in zip(columns, step.categories_, drops)
    ]


def _group(name: str, step: Any, columns: List[str]) -> List[_Block]:
    """The blocks one (name, transformer, columns) entry gives."""
    where = f"transformer {name!r} (columns {', '.join(map(repr, columns))})"
    chain = [s for s in _steps(step) if not _identity(s, where)]
    if chain and type(chain[0]).__name__ in ENCODERS:
        blocks = _encoder_blocks(chain[0], columns, where)
        chain = chain[1:]
    else:
        blocks = [_Block(col, 1) for col in columns]
    for s in chain:
        if type(s).__name__ in ENCODERS:
            raise _refuse(where, s, " after a scaler")
        _compose(blocks, s, where)
    return blocks


def _column_names(columns: Any, names: Sequence[str]) -> List[str]:
    """A ColumnTransformer's column selection (names, indices, a slice, a mask) as names."""
    if isinstance(columns, (str, int, np.integer)):
        columns = [columns]
    if isinstance(columns, slice) or (np.asarray(columns).dtype == bool and len(columns)):
        return [str(n) for n in np.asarray(names, dtype=object)[columns]]
    return [str(names[int(c)]) if isinstance(c, (int, np.integer)) else str(c) for c in columns]


def _unwrap(transformer: Any) -> Tuple[Any, List[Any]]:
    """The ColumnTransformer (or the single fitted step) and the scalers applied after it."""
    if type(transformer).__name__ != "Pipeline":
        return transformer, []
    steps = _steps(transformer)
    at = [i for i, s in enumerate(steps) if type(s).__name__ == "ColumnTransformer"]
    if not at:
        return transformer, []  # a Pipeline of the steps one group takes, over all its inputs
    before, after = steps[: at[-1]], steps[at[-1] + 1 :]
    for s in before:
        if not _identity(s, "the Pipeline's step before its ColumnTransformer"):
            raise _refuse("the Pipeline's step before its ColumnTransformer", s)
    return steps[at[-1]], [s for s in after if not _identity(s, "the Pipeline's step after its ColumnTransformer")]


def sklearn_blocks(transformer: Any) -> List[_Block]:
    """The fitted transformer's outputs in order, as blocks of one table column each."""
    ct, after = _unwrap(transformer)
    names = getattr(ct, "feature_names_in_", None)
    if names is None:
        raise ValueError(
            "encoding_from_sklearn: the transformer was fitted without column names: fit it on a pandas "
            "DataFrame of the table's columns, so that its inputs can be matched to the table's"
        )
    names = [str(n) for n in names]
    if type(ct).__name__ != "ColumnTransformer":
        groups = [("transformer", ct, names)]
    else:
        groups = [(n, s, _column_names(c, names)) for n, s, c in ct.transformers_]
    blocks: List[_Block] = []
    for name, step, columns in groups:
        if not columns or step == "drop":
            continue
        group = _group(name, step, columns)
        weight = (getattr(ct, "transformer_weights", None) or {}).get(name)
        if weight is not None:  # sklearn multiplies the group's outputs by it
            if not float(weight) > 0:
                raise ValueError(f"encoding_from_sklearn: transformer {name!r} has weight {weight}; an input's scale must be positive")
            for b in group:
                b.std = [s / float(weight) for s in b.std]
        span = getattr(ct, "output_indices_", {}).get(name)
        width = sum(len(b.mean) for b in group)
        if span is not None and (span.start != sum(len(b.mean) for b in blocks) or span.stop - span.start != width):
            raise ValueError(
                f"encoding_from_sklearn: transformer {name!r} gives outputs {span.start}..{span.stop} but its "
                f"steps read as {width} outputs from {sum(len(b.mean) for b in blocks)}"
            )
        blocks += group
    for s in after:
        _compose(blocks, s, "the Pipeline's step after its ColumnTransformer")
    seen: Dict[str, int] = {}
    for b in blocks:
        seen[b.column] = seen.get(b.column, 0) + 1
    twice = [c for c, n in seen.items() if n > 1]
    if twice:
        raise ValueError(
            f"encoding_from_sklearn: column {twice[0]!r} feeds more than one transformer; an encoding holds each "
            "column once"
        )
    try:
        total = len(transformer.get_feature_names_out())
    except Exception:  # a step without output names (a FunctionTransformer's default)
        total = None
    if total is not None and total != sum(len(b.mean) for b in blocks):
        raise ValueError(f"encoding_from_sklearn: the transformer gives {total} outputs but its steps read as {sum(len(b.mean) for b in blocks)}")
    return blocks


def _number(text: str) -> Optional[float]:
    try:
        return float(text)
    except ValueError:
        return None


def category_texts(values: Sequence[Any], table: Sequence[str], column: str) -> List[str]:
    """Categories as the CSV writes them: a value's text where the table holds it (the same
    text, the same number — 13.0 is the table's "13" — or the same truth value), else its own
    text (an integral float without ".0")."""
    by_number = {v: t for t, v in ((t, _number(t)) for t in table) if v is not None}
    by_truth = {t.lower(): t for t in table if t.lower() in ("true", "false")}
    out = []
    for v in values:
        if isinstance(v, (bool, np.bool_)):
            text = by_truth.get(str(bool(v)).lower(), str(bool(v)))
        elif isinstance(v, (int, float, np.integer, np.floating)):
            x = float(v)
            text = by_number.get(x) or (str(int(x)) if x.is_integer() else str(x))
        else:
            text = str(v).strip()  # leakscope trims cells
            n = _number(text)
            if text not in table and n is not None:
                text = by_number.get(n, text)
        out.append(text)
    if len(set(out)) < len(out):
        raise ValueError(f"encoding_from_sklearn: column {column!r}: categories {out} read as the same text twice")
    return out


def _assemble(
    blocks: List[_Block], own: Dict[str, Any], classes: Optional[Sequence[Any]], who: str
) -> Dict[str, Any]:
    """The encoding dict: the blocks' features over leakscope's own reading `own` of the table
    (a continuous column's range, decimals and std; a categorical one's categories)."""
    theirs = {f["name"]: f for f in own["features"]}
    features: List[Dict[str, Any]] = []
    mean: List[float] = []
    std: List[float] = []
    for b in blocks:
        f = theirs[b.column]
        feature: Dict[str, Any]
        values: List[Tuple[float, float]]
        if b.categories is None:
            feature = {k: v for k, v in f.items() if k not in ("coding", "dropped")}
            values = [(f["min"], f["max"])]
        else:
            cats = category_texts(b.categories, f["categories"], b.column)
            unknown = [c for c in f["categories"] if c not in cats]
            if unknown:
                raise ValueError(
                    f"{who}: column {b.column!r} holds {', '.join(map(repr, unknown[:5]))} in the table, which the "
                    f"encoder does not know (its categories: {', '.join(map(repr, cats[:10]))}); the client could not "
                    "encode those rows: fit the encoder on the table"
                )
            feature = {"name": b.column, "kind": "categorical", "categories": cats}
            if b.coding == "ordinal":
                feature["coding"] = "ordinal"
                codes = [cats.index(c) for c in f["categories"]]
                values = [(min(codes), max(codes))]
            else:
                # Each input's values over the table: 1 where its category occurs, 0 where another does.
                kept = [c for i, c in enumerate(cats) if i != b.drop]
                values = [(0.0 if set(f["categories"]) - {c} else 1.0, 1.0 if c in f["categories"] else 0.0) for c in kept]
                if b.drop is not None:
                    feature["dropped"] = cats[b.drop]
        for (lo, hi), (a, z) in zip(b.bounds, values):
            if a < lo - 1e-9 * max(1.0, abs(lo)) or z > hi + 1e-9 * max(1.0, abs(hi)):
                raise ValueError(
                    f"{who}: column {b.column!r}: a MinMaxScaler with clip=True clips the table's values "
                    f"({a:g}..{z:g} outside {lo:g}..{hi:g}), which an encoding cannot state: fit it on the table"
                )
        feature["offset"] = len(mean)
        features.append(feature)
        mean += b.mean
        std += b.std
    out = {
        **own,
        "features": features,
        "mean": [float(m) for m in mean],
        "std": [float(s) for s in std],
        "determined": _determined(own, features),
    }
    if classes is not None:
        given = category_texts(list(classes), own["classes"], own["label"])
        missing = [c for c in own["classes"] if c not in given]
        if missing:
            raise ValueError(f"{who}: the table's label holds {missing!r}, which classes= leaves out")
        out["classes"] = given
    return out


def _determined(own: Dict[str, Any], features: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """The continuous columns leakscope's reading of the table found determined by a categorical
    one (`own["determined"]`: a value per category in the table's sorted order), each value moved
    to its category's place in the encoder's order, which may differ (numbers as categories sort
    as numbers in scikit-learn, as text here)."""
    theirs = {f["name"]: f for f in own["features"]}
    ours = {f["name"]: f for f in features}
    out: List[Dict[str, Any]] = []
    for d in own.get("determined", []):
        column, by = ours.get(d["column"]), ours.get(d["by"])
        if column is None or by is None or column["kind"] != "continuous" or by["kind"] != "categorical":
            continue
        value = dict(zip(theirs[d["by"]]["categories"], d["values"]))
        out.append({**d, "values": [value.get(c) for c in by["categories"]]})
    return out


def _own(table: Any, label: str, kinds: Dict[str, str], task: Optional[str], who: str) -> Dict[str, Any]:
    """leakscope's reading of the table's used columns, each of the kind the client gives it."""
    from . import encoding, inspect

    header = [c["name"] for c in inspect(table)["columns"]]
    if label in kinds:
        raise ValueError(f"{who}: the label {label!r} is among the client's inputs")
    absent = [c for c in kinds if c not in header]
    if absent:
        raise ValueError(f"{who}: the table has no column {absent[0]!r}, which the client's inputs have")
    ignore = [c for c in header if c not in kinds and c != label]
    return encoding(table, label, kinds=kinds, ignore=ignore or None, task=task)


def _embedded(encoding: Dict[str, Any], embeddings: Dict[str, Any], who: str) -> Dict[str, Any]:
    """The encoding of a network that feeds each named column's ordinal code to an nn.Embedding
    and puts the embedding where the code was: that column coded "embedding", `width` inputs
    (the table's row), the other inputs moved along. A width, or (width, tensor name)."""
    unknown = [c for c in embeddings if c not in {f["name"] for f in encoding["features"]}]
    if unknown:
        raise ValueError(f"{who}: embeddings= names {unknown[0]!r}, which is not one of the transformer's columns")
    features: List[Dict[str, Any]] = []
    mean: List[float] = []
    std: List[float] = []
    for f in encoding["features"]:
        at = f["offset"]
        width = 1 if f["kind"] == "continuous" or f.get("coding") == "ordinal" else len(f["categories"]) - ("dropped" in f)
        g = dict(f, offset=len(mean))
        if f["name"] not in embeddings:
            mean += encoding["mean"][at : at + width]
            std += encoding["std"][at : at + width]
            features.append(g)
            continue
        spec = embeddings[f["name"]]
        w, tensor = (spec, None) if isinstance(spec, int) else (int(spec[0]), str(spec[1]))
        if f.get("coding") != "ordinal" or (encoding["mean"][at], encoding["std"][at]) != (0.0, 1.0):
            raise ValueError(
                f"{who}: column {f['name']!r} feeds an embedding, so its transformer must give its unscaled "
                "OrdinalEncoder code (the index the nn.Embedding takes)"
            )
        if w < 1:
            raise ValueError(f"{who}: column {f['name']!r}: an embedding's width is at least 1, not {w}")
        g.update(coding="embedding", width=w)
        if tensor is not None:
            g["tensor"] = tensor
        mean += [0.0] * w
        std += [1.0] * w
        features.append(g)
    return {**encoding, "features": features, "mean": mean, "std": std}


def encoding_from_sklearn(
    transformer: Any,
    *,
    label: str,
    table: Any,
    classes: Optional[Sequence[Any]] = None,
    task: Optional[str] = None,
    embeddings: Optional[Dict[str, Any]] = None,
) -> Dict[str, Any]:
    """The encoding (leakscope-encoding/1, as a dict) of a fitted scikit-learn ColumnTransformer —
    or a Pipeline holding one (identity steps before it, scalers after it), or one supported step
    fitted on a DataFrame — read from its fitted attributes, never unpickled. Each of its column
    groups is OneHotEncoder (any drop and handle_unknown; no infrequent categories),
    OrdinalEncoder, StandardScaler, MinMaxScaler, MaxAbsScaler, RobustScaler, 'passthrough',
    'drop', FunctionTransformer without func or SimpleImputer, or a Pipeline of those (imputers,
    an encoder or scaler, then scalers, composed); anything else is refused, naming it.

    `table` (a CSV path, CSV bytes or a DataFrame; its complete rows) gives the continuous
    columns' range, decimals and std; categories are the encoder's, in its order, written as the
    CSV writes them. `classes`: the label's classes in the network's output order (default:
    leakscope's, sorted); `task`: "regression" for a numeric label.

    `embeddings`: for a network that feeds OrdinalEncoder codes to nn.Embedding tables and puts
    each embedding where its code was, {column: width} (or {column: (width, "module name")}); the
    tables themselves are in the update (docs/usage/real-updates.md says which table is whose)."""
    who = "encoding_from_sklearn"
    blocks = sklearn_blocks(transformer)
    kinds = {b.column: "continuous" if b.categories is None else "categorical" for b in blocks}
    out = _assemble(blocks, _own(table, label, kinds, task, who), classes, who)
    return _embedded(out, embeddings, who) if embeddings else out


def encoding_from_dummies(
    dummies: Any,
    *,
    table: Any,
    label: str,
    classes: Optional[Sequence[Any]] = None,
    prefix_sep: str = "_",
) -> Dict[str, Any]:
    """The encoding of the frame `pandas.get_dummies(frame, columns=..., drop_first=...,
    prefix_sep=...)` made from `table`'s columns: a column of the table is a number as is; the
    columns `<column><prefix_sep><category>` of one table column are its one-hot block (a
    category of the table without one is the one drop_first dropped). The label column, if
    present, is skipped. Nothing is scaled (mean 0, std 1)."""
    from . import inspect

    who = "encoding_from_dummies"
    header = [c["name"] for c in inspect(table)["columns"]]
    blocks: List[_Block] = []
    for col in (str(c) for c in dummies.columns):
        if col == label:
            continue
        if col in header:
            blocks.append(_Block(col, 1))
            continue
        sources = [h for h in header if col.startswith(h + prefix_sep) and h != label]
        if not sources:
            raise ValueError(
                f"{who}: column {col!r} is neither a column of the table nor <column>{prefix_sep}<category> of one"
            )
        source = max(sources, key=len)
        category = col[len(source) + len(prefix_sep) :]
        last = blocks[-1] if blocks else None
        if last is not None and last.column == source and last.categories is not None:
            last.categories.append(category)
            last.mean.append(0.0)
            last.std.append(1.0)
            last.bounds.append((-math.inf, math.inf))
        else:
            blocks.append(_Block(source, 1, [category]))
    kinds = {b.column: "continuous" if b.categories is None else "categorical" for b in blocks}
    own = _own(table, label, kinds, None, who)
    table_cats = {f["name"]: f["categories"] for f in own["features"] if f["kind"] == "categorical"}
    for b in blocks:
        if b.categories is None:
            continue
        cats = category_texts(b.categories, table_cats[b.column], b.column)
        absent = [c for c in table_cats[b.column] if c not in cats]
        if len(absent) > 1:
            raise ValueError(
                f"{who}: column {b.column!r} holds {', '.join(map(repr, absent))} in the table without a dummy column; "
                "drop_first drops one category"
            )
        if absent:  # drop_first: the first category pandas sorted, before the others
            b.categories, b.drop = absent + cats, 0
        else:
            b.categories = cats
    return _assemble(blocks, own, classes, who)
