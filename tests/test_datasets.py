"""The example data sets ship with the package (issue 39, point 9): probanon.datasets and
``probanon datasets`` give exactly the reference files of ../shared/data, a build copies them
(probanon/datasets/sources.py), and an installation without them says so in one line."""

import gzip

import pandas as pd
import pytest

from helpers import SHARED_DATA
from probanon import datasets
from probanon.cli import main
from probanon.datasets import sources
from probanon.errors import InputError, ParameterError

REFERENCE = {"census": "casc/census.csv", "tarragona": "casc/tarragona.csv", "eia": "casc/eia.csv",
             "adult": "adult/adult.csv"}


def test_every_reference_file_is_packaged_byte_for_byte(shared_data):
    assert datasets.names() == list(REFERENCE)
    for name, relative in REFERENCE.items():
        assert datasets.content(name) == (shared_data / relative).read_bytes(), name
    assert datasets.path("adult").name == "adult.csv.gz"  # compressed in the package
    assert datasets.path("adult").stat().st_size < (shared_data / "adult/adult.csv").stat().st_size / 5


def test_load_gives_the_reference_tables_and_describe_their_shapes(shared_data):
    for name, relative in REFERENCE.items():
        frame, reference = datasets.load(name), pd.read_csv(shared_data / relative)
        pd.testing.assert_frame_equal(frame, reference, check_dtype=False)
        assert datasets.describe(name).startswith(f"{len(reference):,} records x {reference.shape[1]} columns")
    # the shared README's figures
    adult = datasets.load("adult")
    assert adult.shape == (48842, 15) and (adult == "?").any().any()


def test_an_unknown_name_is_refused():
    with pytest.raises(ParameterError, match="unknown data set 'censu'.*census, tarragona, eia, adult"):
        datasets.load("censu")


def test_an_installation_without_the_data_says_so(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(datasets, "FOLDER", tmp_path / "data")
    with pytest.raises(InputError, match="not in this installation of probanon.*built without ../shared/data"):
        datasets.load("census")
    out = tmp_path / "out"
    assert main(["datasets", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("probanon: error: the example data set 'census' is not in")
    assert not out.exists()


def test_the_command_lists_and_writes_them_with_force_semantics(tmp_path, capsys, shared_data):
    assert main(["datasets"]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in listed] == list(REFERENCE)
    out = tmp_path / "data"
    assert main(["datasets", "-o", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["adult.csv", "census.csv", "eia.csv", "tarragona.csv"]
    for name, relative in REFERENCE.items():
        assert (out / f"{name}.csv").read_bytes() == (shared_data / relative).read_bytes()
    (out / "census.csv").write_text("mine\n")
    capsys.readouterr()
    assert main(["datasets", "census", "-o", str(out)]) == 2
    assert "census.csv: exists already (give --force" in capsys.readouterr().err
    assert (out / "census.csv").read_text() == "mine\n"
    assert main(["datasets", "census", "-o", str(out), "--force"]) == 0
    assert (out / "census.csv").read_bytes() == (shared_data / "casc/census.csv").read_bytes()
    assert main(["datasets", "nope"]) == 2
    assert "unknown data set 'nope'" in capsys.readouterr().err


def test_the_build_step_copies_once_and_compresses_reproducibly(tmp_path, shared_data):
    first, second = tmp_path / "a", tmp_path / "b"
    assert sources.populate(SHARED_DATA, first) == list(REFERENCE)
    assert sources.populate(SHARED_DATA, first) == []  # up to date: nothing copied again
    sources.populate(SHARED_DATA, second)
    assert (first / "adult.csv.gz").read_bytes() == (second / "adult.csv.gz").read_bytes()
    assert gzip.decompress((first / "adult.csv.gz").read_bytes()) == (shared_data / "adult/adult.csv").read_bytes()
    assert (first / "census.csv").read_bytes() == (shared_data / "casc/census.csv").read_bytes()
    assert not list(first.glob(".*"))  # no temporary left


def test_the_reproductions_default_to_the_packaged_data(tmp_path, monkeypatch, shared_data):
    from probanon.reproduce.swapping import _data

    assert datasets.reference_file(None, "adult") == datasets.path("adult")
    assert datasets.reference_file(shared_data, "adult") == shared_data / "adult/adult.csv"
    C, names, E = _data(None, [])  # no --data-dir: the packaged census and EIA
    assert C.shape == (1080, 13) and E.shape == (4092, 10)
    monkeypatch.setattr(datasets, "FOLDER", tmp_path / "data")
    with pytest.raises(InputError, match="census.csv: no such file \\(pass --data-dir\\)"):
        _data(None, [])
