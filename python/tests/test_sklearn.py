"""A client's own preprocessing read into an encoding: for scikit-learn's ColumnTransformers and
pandas.get_dummies fitted on the Adult sample and German Credit, `leakscope.encode` under the
encoding read from them gives what the client's own `transform` gives; what an encoding cannot
state is refused, naming it."""
import re

import numpy as np
import pandas as pd
import pytest
from sklearn.compose import ColumnTransformer
from sklearn.impute import SimpleImputer
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import (
    MinMaxScaler,
    OneHotEncoder,
    OrdinalEncoder,
    PolynomialFeatures,
    RobustScaler,
    StandardScaler,
)

import leakscope
from conftest import ADULT, GERMAN
from leakscope.flower import LeakageMod

TABLES = {"adult": (ADULT, "salary"), "german": (GERMAN, "credit_risk")}


def complete(path, label, used=None):
    """The table's rows complete in `used` (default: every column) and the label, as leakscope
    keeps them ("?" is a missing cell there)."""
    frame = pd.read_csv(path, na_values=["?"])
    used = [c for c in frame.columns if c != label] if used is None else used
    return frame.dropna(subset=[*used, label]).reset_index(drop=True)


def columns(frame, label):
    """The categorical (text) and numeric columns, label left out."""
    cat = [c for c in frame.columns if c != label and not pd.api.types.is_numeric_dtype(frame[c])]
    return cat, [c for c in frame.columns if c != label and c not in cat]


def assert_same_inputs(path, encoding, want):
    """leakscope's encoding of the table's rows is the client's own, to float32's precision:
    leakscope gives float32, whose rounding of a large input (a raw fnlwgt of 1.2 million, a
    standardised capital-gain of 13) passes 1e-6 absolute, so the bound is 1e-6 relative to
    max(1, |value|)."""
    got, _ = leakscope.encode(path, encoding)
    want = np.asarray(want, dtype=np.float64)
    assert got.shape == want.shape
    gap = np.abs(got.astype(np.float64) - want) / np.maximum(1.0, np.abs(want))
    assert gap.max() <= 1e-6, (np.unravel_index(gap.argmax(), gap.shape), gap.max())


SCALERS = {"standard": StandardScaler, "minmax": MinMaxScaler, "robust": RobustScaler, "passthrough": lambda: "passthrough"}


@pytest.mark.parametrize("table", TABLES)
@pytest.mark.parametrize("drop", [None, "first", "if_binary"])
@pytest.mark.parametrize("unknown", ["ignore", "error"])
@pytest.mark.parametrize("scaler", SCALERS)
def test_one_hot_with_each_scaler_encodes_as_the_transformer(table, drop, unknown, scaler):
    path, label = TABLES[table]
    frame = complete(path, label)
    cat, num = columns(frame, label)
    onehot = OneHotEncoder(drop=drop, handle_unknown=unknown, sparse_output=False)
    ct = ColumnTransformer([("cat", onehot, cat), ("num", SCALERS[scaler](), num)]).fit(frame.drop(columns=label))
    enc = leakscope.encoding_from_sklearn(ct, label=label, table=path)
    assert_same_inputs(path, enc, ct.transform(frame.drop(columns=label)))
    dropped = {f["name"]: f.get("dropped") for f in enc["features"]}
    if drop == "first":
        assert all(dropped[c] is not None for c in cat)
    elif drop == "if_binary":
        assert [c for c in cat if dropped[c]] == [c for c in cat if frame[c].nunique() == 2]
    assert enc["classes"] == leakscope.encoding(path, label)["classes"]


@pytest.mark.parametrize("table", TABLES)
def test_ordinal_codes_a_pipeline_and_the_remainder(table):
    path, label = TABLES[table]
    frame = complete(path, label)
    cat, num = columns(frame, label)
    x = frame.drop(columns=label)
    cases = {
        "ordinal, numbers as categories": ColumnTransformer(
            [("ord", OrdinalEncoder(), [*cat, num[0]]), ("num", StandardScaler(), num[1:])]
        ),
        "ordinal then scaled": ColumnTransformer(
            [("ord", Pipeline([("o", OrdinalEncoder()), ("s", StandardScaler())]), cat)], remainder=MinMaxScaler()
        ),
        "one-hot then scaled without centring": ColumnTransformer(
            [("cat", Pipeline([("o", OneHotEncoder(sparse_output=False)), ("s", StandardScaler(with_mean=False))]), cat),
             ("num", Pipeline([("i", SimpleImputer()), ("s", StandardScaler())]), num)]
        ),
        "remainder passed through, columns reordered": ColumnTransformer(
            [("num", RobustScaler(), num[:0:-1]), ("cat", OneHotEncoder(drop="first", sparse_output=False), cat[::-1])],
            remainder="passthrough",
        ),
        "weighted groups, in a single-step Pipeline": Pipeline([("ct", ColumnTransformer(
            [("cat", OneHotEncoder(sparse_output=False), cat), ("num", StandardScaler(), num)],
            transformer_weights={"cat": 2.0, "num": 0.5},
        ))]),
        "a ColumnTransformer in a Pipeline, scaled after": Pipeline([
            ("ct", ColumnTransformer([("cat", OneHotEncoder(sparse_output=False), cat)], remainder="passthrough")),
            ("s", StandardScaler()),
        ]),
    }
    for name, transformer in cases.items():
        transformer.fit(x)
        enc = leakscope.encoding_from_sklearn(transformer, label=label, table=path)
        assert_same_inputs(path, enc, transformer.transform(x))
    reordered = cases["remainder passed through, columns reordered"]
    names = [f["name"] for f in leakscope.encoding_from_sklearn(reordered, label=label, table=path)["features"]]
    assert names == [*num[:0:-1], *cat[::-1], num[0]], "the transformers' order, the remainder's column last"
    ordinal = leakscope.encoding_from_sklearn(cases["ordinal, numbers as categories"], label=label, table=path)
    number = next(f for f in ordinal["features"] if f["name"] == num[0])
    assert number["coding"] == "ordinal" and number["categories"][0] == str(int(frame[num[0]].min()))


def test_columns_left_out_are_not_read_and_a_dataframe_table_reads_as_its_csv():
    """remainder="drop": only the transformer's columns count, so a row missing a cell elsewhere
    (Adult's "?" in workclass) is the client's too."""
    used = ["age", "education", "sex", "hours-per-week"]
    frame = complete(ADULT, "salary", used)
    assert frame.isna().any().any(), "rows missing a cell the transformer does not read are kept"
    ct = ColumnTransformer(
        [("cat", OneHotEncoder(sparse_output=False), ["education", "sex"]), ("num", StandardScaler(), ["age", "hours-per-week"])]
    ).fit(frame.drop(columns="salary"))
    enc = leakscope.encoding_from_sklearn(ct, label="salary", table=ADULT)
    assert [f["name"] for f in enc["features"]] == ["education", "sex", "age", "hours-per-week"]
    assert_same_inputs(ADULT, enc, ct.transform(frame.drop(columns="salary")))
    assert leakscope.encoding_from_sklearn(ct, label="salary", table=pd.read_csv(ADULT)) == enc


@pytest.mark.parametrize("table", TABLES)
@pytest.mark.parametrize("drop_first", [False, True])
def test_get_dummies_encodes_as_pandas(table, drop_first):
    path, label = TABLES[table]
    frame = complete(path, label)
    cat, num = columns(frame, label)
    dummies = pd.get_dummies(frame, columns=cat, drop_first=drop_first)
    enc = leakscope.encoding_from_dummies(dummies, table=path, label=label)
    assert_same_inputs(path, enc, dummies.drop(columns=label).to_numpy(dtype=float))
    assert all(("dropped" in f) == drop_first for f in enc["features"] if f["kind"] == "categorical")
    # The label left out, another separator, the numbers dummied too (pandas sorts them as numbers).
    dummies = pd.get_dummies(frame.drop(columns=label), columns=[*cat, num[0]], prefix_sep="=", drop_first=drop_first)
    enc = leakscope.encoding_from_dummies(dummies, table=path, label=label, prefix_sep="=")
    assert_same_inputs(path, enc, dummies.to_numpy(dtype=float))


def test_a_determined_column_follows_its_category_in_the_encoders_order():
    """A continuous column the table determines from a categorical one travels in the encoding
    with a value per category in the encoder's order: numbers as categories sort as numbers in
    scikit-learn and pandas, as text in leakscope's own reading ("10" before "2")."""
    rng = np.random.default_rng(0)
    grade = rng.integers(1, 13, 300)
    table = pd.DataFrame({"grade": grade, "score": 10.0 * grade + 0.5, "noise": rng.normal(size=300).round(2),
                          "label": rng.choice(["no", "yes"], 300)})
    csv = table.to_csv(index=False).encode()
    ct = ColumnTransformer([("cat", OneHotEncoder(sparse_output=False), ["grade"]),
                            ("num", StandardScaler(), ["score", "noise"])]).fit(table.drop(columns="label"))
    dummies = pd.get_dummies(table, columns=["grade"], drop_first=True)
    for enc in (leakscope.encoding_from_sklearn(ct, label="label", table=csv),
                leakscope.encoding_from_dummies(dummies, table=csv, label="label")):
        grades = next(f for f in enc["features"] if f["name"] == "grade")["categories"]
        assert grades[:3] == ["1", "2", "3"], grades
        (determined,) = enc["determined"]
        assert (determined["column"], determined["by"]) == ("score", "grade")
        assert determined["values"] == [10.0 * int(g) + 0.5 for g in grades]
    own = leakscope.encoding(csv, "label", kinds={"grade": "categorical"})
    assert own["determined"][0]["values"][:2] == [10.5, 100.5], "leakscope's own order: text"


def adult():
    frame = complete(ADULT, "salary")
    cat, num = columns(frame, "salary")
    return frame, frame.drop(columns="salary"), cat, num


def refused(transformer, message, table=ADULT):
    with pytest.raises(ValueError, match=re.escape(message)):
        leakscope.encoding_from_sklearn(transformer, label="salary", table=table)


def test_what_an_encoding_cannot_state_is_refused_by_name():
    frame, x, cat, num = adult()
    infrequent = ColumnTransformer([("cat", OneHotEncoder(min_frequency=50, sparse_output=False), cat)]).fit(x)
    refused(infrequent, "encoding_from_sklearn: transformer 'cat' (columns 'workclass', ")
    refused(infrequent, "OneHotEncoder groups infrequent categories of 'education', 'marital-status'")
    squared = ColumnTransformer([("cat", OneHotEncoder(), cat), ("poly", PolynomialFeatures(), ["age", "fnlwgt"])]).fit(x)
    refused(squared, "transformer 'poly' (columns 'age', 'fnlwgt') is 'PolynomialFeatures'; leakscope reads OneHotEncoder, OrdinalEncoder")
    # Fitted on rows without "Preschool": the client could not encode the table's rows that hold it.
    partial = ColumnTransformer([("cat", OneHotEncoder(handle_unknown="ignore"), cat)]).fit(x[x.education != "Preschool"])
    refused(partial, "column 'education' holds 'Preschool' in the table, which the encoder does not know")
    twice = ColumnTransformer([("a", StandardScaler(), ["age"]), ("b", OneHotEncoder(), ["age"])]).fit(x)
    refused(twice, "column 'age' feeds more than one transformer")
    with_label = ColumnTransformer([("cat", OneHotEncoder(), ["sex", "salary"])]).fit(frame)
    refused(with_label, "the label 'salary' is among the client's inputs")
    unnamed = ColumnTransformer([("num", StandardScaler(), [0, 2])]).fit(x[num].to_numpy())
    refused(unnamed, "fitted without column names: fit it on a pandas DataFrame")
    ages = complete(ADULT, "salary", ["age"]).drop(columns="salary")
    clipped = ColumnTransformer([("num", MinMaxScaler(clip=True), ["age"])]).fit(ages[ages.age < 60])
    refused(clipped, "column 'age': a MinMaxScaler with clip=True clips the table's values")
    # Clipping that changes nothing on the table is read as is.
    clipped.fit(ages)
    assert_same_inputs(ADULT, leakscope.encoding_from_sklearn(clipped, label="salary", table=ADULT), clipped.transform(ages))


def test_dummies_of_another_frame_are_refused():
    frame, _, cat, _ = adult()
    dummies = pd.get_dummies(frame[frame.education != "Preschool"], columns=cat, drop_first=True)
    with pytest.raises(ValueError, match=re.escape("column 'education' holds '10th', 'Preschool' in the table without a dummy")):
        leakscope.encoding_from_dummies(dummies, table=ADULT, label="salary")
    with pytest.raises(ValueError, match=re.escape("column 'income' is neither a column of the table")):
        leakscope.encoding_from_dummies(pd.DataFrame({"income": [1]}), table=ADULT, label="salary")


def test_classes_are_given_in_the_networks_order():
    _, x, cat, _ = adult()
    ct = ColumnTransformer([("cat", OneHotEncoder(), cat)]).fit(x)
    assert leakscope.encoding_from_sklearn(ct, label="salary", table=ADULT, classes=[">50K", "<=50K"])["classes"] == [">50K", "<=50K"]
    refused_classes = pytest.raises(ValueError, match=re.escape("the table's label holds ['>50K'], which classes= leaves out"))
    with refused_classes:
        leakscope.encoding_from_sklearn(ct, label="salary", table=ADULT, classes=["<=50K"])


def test_the_mod_reads_the_clients_transformer(tmp_path):
    frame, x, cat, num = adult()
    rows = tmp_path / "rows.csv"
    frame.head(32).to_csv(rows, index=False)
    ct = ColumnTransformer([("cat", OneHotEncoder(drop="if_binary"), cat), ("num", MinMaxScaler(), num)]).fit(x)
    mod = LeakageMod(rows, "salary", transformer=ct, fitted_on=ADULT, records=None)
    assert mod.encoding == leakscope._convert.encoding_json(leakscope.encoding_from_sklearn(ct, label="salary", table=ADULT))
    assert mod.clients[None].count == 32
    with pytest.raises(ValueError, match="give encoding= or transformer=, not both"):
        LeakageMod(rows, "salary", transformer=ct, encoding=leakscope.encoding(ADULT, "salary"), records=None)
    with pytest.raises(ValueError, match=re.escape("or its transformer= with the table it was fitted on (fitted_on=)")):
        LeakageMod(lambda context: rows, "salary", transformer=ct, records=None)


def test_ordinal_codes_feeding_embeddings_are_read_and_attacked_as_the_client_trains():
    """A tabular PyTorch client: OrdinalEncoder codes into an nn.Embedding per column (each where
    its code was), standardised numbers beside them, the default [100, 100] ReLU MLP; one gradient
    on 8 Adult rows.
    `embeddings=` states it, and the attack reads every row off the update."""
    import torch

    path, label = TABLES["adult"]
    frame = complete(path, label)
    cat, num = columns(frame, label)
    ct = ColumnTransformer([("cat", OrdinalEncoder(), cat), ("num", StandardScaler(), num)]).fit(frame.drop(columns=label))
    widths = {c: min(8, frame[c].nunique()) for c in cat}
    enc = leakscope.encoding_from_sklearn(ct, label=label, table=path, embeddings=widths)
    assert [f.get("coding") for f in enc["features"][: len(cat)]] == ["embedding"] * len(cat)
    assert len(enc["mean"]) == sum(widths.values()) + len(num)

    batch = frame.iloc[:8]
    x = torch.tensor(ct.transform(batch.drop(columns=label)), dtype=torch.float32)
    y = torch.tensor([enc["classes"].index(v) for v in batch[label]])
    torch.manual_seed(0)
    tables = torch.nn.ModuleList(torch.nn.Embedding(frame[c].nunique(), widths[c]) for c in cat)
    mlp = torch.nn.Sequential(
        torch.nn.Linear(len(enc["mean"]), 100), torch.nn.ReLU(), torch.nn.Linear(100, 100), torch.nn.ReLU(), torch.nn.Linear(100, 2)
    )
    model = torch.nn.ModuleDict({"embeddings": tables, "mlp": mlp})
    inputs = torch.cat([t(x[:, i].long()) for i, t in enumerate(tables)] + [x[:, len(cat):]], dim=1)
    loss = torch.nn.functional.cross_entropy(mlp(inputs), y)
    names = [n for n, _ in model.named_parameters()]
    grads = torch.autograd.grad(loss, [p for _, p in model.named_parameters()])
    weights = {n: p.detach().numpy() for n, p in model.named_parameters()}
    update = {n: g.numpy() for n, g in zip(names, grads)}
    report = leakscope.attack_update(enc, weights, update, truth=batch, batch_size=8)
    assert report["accuracy"]["total"] >= 0.99 and report["rows_proved"] == 8, report["accuracy"]
    with pytest.raises(ValueError, match="feeds an embedding, so its transformer must give its unscaled OrdinalEncoder code"):
        leakscope.encoding_from_sklearn(
            ColumnTransformer([("cat", OneHotEncoder(), cat), ("num", StandardScaler(), num)]).fit(frame.drop(columns=label)),
            label=label, table=path, embeddings={cat[0]: 3},
        )
