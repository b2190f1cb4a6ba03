"""SPSS (.sav) and Stata (.dta) tables: read and written by extension, labels preserved
(issue 17, point 6). Inputs are made and outputs read back with pyreadstat itself."""

import pandas as pd
import pyreadstat
import pytest
from helpers import SHARED_DATA

from probanon.cli import main
from probanon.data import read_table
from probanon.errors import InputError
from probanon.outputs import Outputs

WRITE = {"sav": pyreadstat.write_sav, "dta": pyreadstat.write_dta}
READ = {"sav": pyreadstat.read_sav, "dta": pyreadstat.read_dta}
SEX = {1: "Male", 2: "Female"}


def _adult(n=400):
    """The first n Adult records, coded as an office's SPSS/Stata file would hold them: sex and
    race as numeric codes with value labels, and variable labels."""
    frame = pd.read_csv(SHARED_DATA / "adult" / "adult.csv", nrows=n, skipinitialspace=True)
    races = sorted(frame["race"].unique())
    race = {i + 1: r for i, r in enumerate(races)}
    coded = pd.DataFrame({
        "age": frame["age"].astype(float),
        "hours": frame["hours-per-week"].astype(float),
        "edu": frame["education-num"].astype(float),
        "sex": frame["sex"].map({v: c for c, v in SEX.items()}).astype(float),
        "race": frame["race"].map({v: c for c, v in race.items()}).astype(float),
    })
    labels = {
        "file_label": "Adult extract",
        "column_labels": {"age": "Age in years", "hours": "Hours per week", "edu": "Years of education",
                          "sex": "Sex", "race": "Race"},
        "variable_value_labels": {"sex": SEX, "race": race, "edu": {16: "Doctorate"}},
    }
    return coded, labels


def _write(tmp_path, ext, frame, labels, name="in"):
    path = tmp_path / f"{name}.{ext}"
    WRITE[ext](frame, str(path), **labels)
    return path


@pytest.mark.parametrize("ext", ["sav", "dta"])
def test_round_trip_keeps_values_and_labels(tmp_path, ext):
    frame, labels = _adult()
    source = _write(tmp_path, ext, frame, labels)
    table = read_table(source)
    pd.testing.assert_frame_equal(table.reset_index(drop=True), frame, check_dtype=False)
    out = tmp_path / f"copy.{ext}"
    outputs = Outputs([source])
    outputs.add(out, table=True)
    outputs.write({out: table})
    back, meta = READ[ext](str(out))
    pd.testing.assert_frame_equal(back, frame, check_dtype=False)
    assert meta.file_label == "Adult extract"
    assert dict(zip(meta.column_names, meta.column_labels)) == labels["column_labels"]
    assert {c: {int(v): t for v, t in m.items()} for c, m in meta.variable_value_labels.items()} == \
        labels["variable_value_labels"]


@pytest.mark.parametrize("ext_in, ext_out", [("sav", "sav"), ("sav", "dta"), ("dta", "sav"), ("dta", "dta")])
def test_microaggregate_from_and_to_spss_and_stata(tmp_path, capsys, ext_in, ext_out):
    """The release of a labelled file is the release of the same table as CSV (written with
    its whole numbers as such, so the same precision); variable labels stay; value labels stay
    on the codes that are still codes (sex, race: confidential) and are dropped, said in the
    summary, where the values became group means (edu: a key; its means rounded to whole
    numbers, the input's precision, are still means)."""
    frame, labels = _adult()
    source = _write(tmp_path, ext_in, frame, labels)
    frame.to_csv(tmp_path / "in.csv", index=False, float_format="%.15g")
    args = ["-k", "5", "--keys", "age,hours,edu", "--confidential", "sex,race", "--seed", "3"]
    out = tmp_path / f"out.{ext_out}"
    assert main(["microaggregate", str(source), "-o", str(out), *args]) == 0
    err = capsys.readouterr().err
    assert main(["microaggregate", str(tmp_path / "in.csv"), "-o", str(tmp_path / "out.csv"), *args]) == 0
    released, meta = READ[ext_out](str(out))
    expected = pd.read_csv(tmp_path / "out.csv")
    pd.testing.assert_frame_equal(released, expected, check_dtype=False)
    assert not expected["edu"].value_counts().equals(frame["edu"].value_counts())  # group means: no longer codes
    assert dict(zip(meta.column_names, meta.column_labels)) == labels["column_labels"]
    kept = {c: {int(v): t for v, t in m.items()} for c, m in meta.variable_value_labels.items()}
    assert kept == {"sex": SEX, "race": labels["variable_value_labels"]["race"]}
    assert "edu" in err and "value labels dropped" in err


def test_apply_in_chunks_writes_the_same_stata_file(tmp_path):
    """A .sav read in chunks (apply with --chunk-size) gives the release of the whole file."""
    frame, labels = _adult(600)
    source = _write(tmp_path, "sav", frame, labels)
    function = tmp_path / "f.json"
    assert main(["microaggregate", str(source), "-o", str(tmp_path / "fit.csv"), "-k", "5", "--keys", "age,hours",
                 "--confidential", "sex,race,edu", "--function", str(function), "--quiet"]) == 0
    outs = {}
    for size in (1_000_000, 128):
        outs[size] = tmp_path / f"applied{size}.dta"
        assert main(["apply", str(function), str(source), "-o", str(outs[size]), "--confidential", "sex,race,edu",
                     "--seed", "1", "--chunk-size", str(size), "--quiet"]) == 0
    whole, meta = pyreadstat.read_dta(str(outs[1_000_000]))
    chunked, meta_chunked = pyreadstat.read_dta(str(outs[128]))
    pd.testing.assert_frame_equal(whole, chunked)
    assert meta.variable_value_labels == meta_chunked.variable_value_labels
    assert set(meta.variable_value_labels) == {"sex", "race", "edu"}  # edu is not a key here: still codes


def _refused(tmp_path, capsys, source, out, fragment):
    code = main(["microaggregate", str(source), "-o", str(out), "-k", "5", "--keys", "age,hours", "--keep-other"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code != 0 and len(err) == 1 and fragment in err[0], err
    assert not out.exists() and not [p for p in tmp_path.iterdir() if p.name.startswith(".out")]


def test_unknown_format_and_unwritable_tables_are_one_line_errors(tmp_path, capsys):
    frame, labels = _adult(60)
    source = _write(tmp_path, "sav", frame, labels)
    _refused(tmp_path, capsys, source, tmp_path / "out.xlsx", "unknown output type '.xlsx'")
    frame.rename(columns={"race": "race group"}).to_parquet(tmp_path / "spaced.parquet")  # a name Stata refuses
    _refused(tmp_path, capsys, tmp_path / "spaced.parquet", tmp_path / "out.dta", "cannot be written as Stata")
    (tmp_path / "broken.sav").write_bytes(b"not an SPSS file at all")
    with pytest.raises(InputError, match=r"broken\.sav: cannot be read as spss"):
        read_table(tmp_path / "broken.sav")
