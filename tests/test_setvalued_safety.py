"""Issue 13 for set-valued data (paper 5): FIMI input and constraint files (point 11), progress
on stderr for ``km check``/``km uniqueness`` (point 13) and ``km check`` as a gate (point 6)."""

import json

import pytest

from probanon.cli import main
from probanon.errors import InputError
from probanon.setvalued import read_fimi

# Table I of the paper and its Example 1 (k = 2, m = 2): with every city alone, the 1-itemsets are
# all 2-anonymous and 4 of the 6 distinct 2-itemsets are ({LA, Boston} and {Seattle, Boston} occur
# only in record 7); merging Boston with New York makes both levels 2-anonymous.
TABLE_I = [["LA"], ["LA", "Seattle"], ["NewYork", "Boston"], ["NewYork", "Boston"],
           ["LA", "Seattle", "NewYork"], ["LA", "Seattle", "NewYork"], ["LA", "Seattle", "NewYork", "Boston"]]
IDENTITY = {"LA": 0, "Seattle": 1, "NewYork": 2, "Boston": 3}
EXAMPLE_1 = {"LA": 0, "Seattle": 1, "NewYork": 2, "Boston": 2}


def _one_line(err: str) -> str:
    err = err.strip()
    assert err.startswith("probanon: error:") and len(err.splitlines()) == 1 and "Traceback" not in err
    return err


# ------------------------------------------------------------------------------------ FIMI input

def test_fimi_line_with_a_comma_is_refused_naming_the_line(tmp_path, capsys):
    f = tmp_path / "d.txt"
    f.write_text("1 2\n2 3\n3,4\n")
    with pytest.raises(InputError, match="line 3 has a comma") as e:
        read_fimi(f)
    assert "\n" not in str(e.value)
    out = tmp_path / "out.txt"
    assert main(["km", "anonymize", str(f), "-k", "1", "-m", "1", "--sigma", "1", "-o", str(out), "--quiet"]) == 2
    assert "line 3 has a comma" in _one_line(capsys.readouterr().err)
    assert not out.exists()


def test_fimi_trailing_blank_lines_accepted_inner_ones_refused(tmp_path):
    f = tmp_path / "d.txt"
    f.write_text("1 2\n2 3\n\n  \n\n")
    data = read_fimi(f)
    assert data.n_records == 2 and data.record_sizes.tolist() == [2, 2]
    f.write_text("1 2\n\n \n2 3\n\n")
    with pytest.raises(InputError, match="line 2 is an empty record"):
        read_fimi(f)
    f.write_text("\n\n")
    with pytest.raises(InputError, match="no records"):
        read_fimi(f)


# ------------------------------------------------------------------------------- constraint files

@pytest.mark.parametrize("flag,text,unknown", [
    ("--hierarchy", "child,parent\na,x\nb,x\nc,y\nzz,y\nx,root\ny,root\n", "zz"),
    ("--adjacency", "u,v\na,b\nb,c\nc,zz\n", "zz"),
])
def test_items_of_a_constraint_file_missing_from_the_data_are_refused(tmp_path, capsys, flag, text, unknown):
    src = tmp_path / "d.txt"
    src.write_text("a b\na b\nb c\nc a\n")
    cons = tmp_path / "c.csv"
    cons.write_text(text)
    out = tmp_path / "out.txt"
    assert main(["km", "anonymize", str(src), "-k", "2", "-m", "2", "--sigma", "0.9", flag, str(cons),
                 "-o", str(out), "--quiet"]) == 2
    err = _one_line(capsys.readouterr().err)
    assert f"'{unknown}'" in err and "not in the data" in err
    assert not out.exists()


# ------------------------------------------------------------------------------- km check as gate

def _files(tmp_path, partition, **recorded):
    data = tmp_path / "table1.txt"
    data.write_text("".join(" ".join(r) + "\n" for r in TABLE_I))
    spec = tmp_path / "p.json"
    spec.write_text(json.dumps({"partition": partition, **recorded}))
    return str(data), str(spec)


def test_check_exits_1_when_a_fraction_is_below_sigma(tmp_path, capsys):
    data, spec = _files(tmp_path, IDENTITY, k=2, m=2, sigma=0.9)
    assert main(["km", "check", data, spec, "--quiet", "--json"]) == 1  # 4/6 < .9, sigma from the file
    out = json.loads(capsys.readouterr().out)
    assert [lv["fraction"] for lv in out["levels"]] == pytest.approx([1.0, 4 / 6])
    assert out["sigma"] == 0.9 and out["sigma_from"] == spec and out["satisfied"] is False
    assert [lv["satisfied"] for lv in out["levels"]] == [True, False]
    # the command line overrides the recorded sigma; per-level sigmas are read from the file
    assert main(["km", "check", data, spec, "--sigma", "0.6", "--quiet", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["sigma_from"] == "--sigma"
    data, spec = _files(tmp_path, IDENTITY, k=2, m=2, sigma=[1.0, 0.6])
    assert main(["km", "check", data, spec, "--quiet", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["sigma"] == [1.0, 0.6]
    data, spec = _files(tmp_path, IDENTITY, k=2, m=2, sigma=[1.0, 0.7])
    assert main(["km", "check", data, spec, "--quiet"]) == 1
    assert "FAILS at l = 2" in capsys.readouterr().out


def test_check_exits_0_when_every_fraction_reaches_sigma(tmp_path, capsys):
    data, spec = _files(tmp_path, EXAMPLE_1, k=2, m=2, sigma=0.99)
    assert main(["km", "check", data, spec, "--json"]) == 0
    assert [lv["fraction"] for lv in json.loads(capsys.readouterr().out)["levels"]] == [1.0, 1.0]
    assert main(["km", "check", data, spec, "--quiet"]) == 0
    assert "holds" in (out := capsys.readouterr().out) and f"sigma 0.99 from {spec}" in out


@pytest.mark.parametrize("recorded,args,message", [
    ({"k": 2, "m": 2}, [], "records no sigma; give --sigma"),
    ({"k": 2, "m": 2, "sigma": 1.5}, [], "sigma must be in (0, 1]"),
    ({"k": 2, "m": 2, "sigma": [0.9]}, [], "for l = 1..1 only"),
    ({"k": 2, "m": 2, "sigma": 0.9}, ["--sigma", "0.9,0.9,0.9"], "3 values for m = 2"),
])
def test_check_errors_exit_2(tmp_path, capsys, recorded, args, message):
    data, spec = _files(tmp_path, IDENTITY, **recorded)
    assert main(["km", "check", data, spec, *args, "--quiet"]) == 2
    assert message in _one_line(capsys.readouterr().err)


# ------------------------------------------------------------------------------------- progress

def test_check_and_uniqueness_show_progress_unless_quiet(tmp_path, capsys):
    data, spec = _files(tmp_path, EXAMPLE_1, k=2, m=2, sigma=0.99)
    for argv, bar in ((["km", "check", data, spec], "check:"),
                      (["km", "uniqueness", data, "-m", "2", "--seed", "1"], "uniqueness:")):
        assert main(argv) == 0
        err = capsys.readouterr().err
        first = err.lstrip().splitlines()[0]
        assert first.startswith(f"{bar} 7 records")  # a note after the input is read, before any kernel runs
        assert f"{bar} done" in err  # stderr is not a terminal here: a line per stage, then done
        assert main([*argv, "--quiet"]) == 0
        assert capsys.readouterr().err == ""
