"""``probanon reproduce <paper>``: recompute a paper's tables and figures beside its printed values."""

from __future__ import annotations

from .options import add_output, example, seed
from .parser import command


def _surveys(**kwargs) -> dict:
    from ..reproduce.surveys import reproduce_surveys  # lazy: pulls in matplotlib

    return _shown(reproduce_surveys, "surveys", **kwargs)


def _pcl(**kwargs) -> dict:
    from ..reproduce.pcl import reproduce_pcl  # lazy: pulls in matplotlib

    return _shown(reproduce_pcl, "pcl", unit="fit", **kwargs)


def _swapping(**kwargs) -> dict:
    from ..reproduce.swapping import reproduce_swapping  # lazy: pulls in matplotlib

    return _shown(reproduce_swapping, "swapping", **kwargs)


def _diversity(**kwargs) -> dict:
    from ..reproduce.diversity import reproduce_diversity  # lazy: pulls in matplotlib

    return _shown(reproduce_diversity, "diversity", **kwargs)


def _km(**kwargs) -> dict:
    from ..reproduce.km import reproduce_km  # lazy: pulls in matplotlib

    return _shown(reproduce_km, "km", **kwargs)


def _shown(reproduce, paper: str, progress: bool = False, unit: str = "step", **kwargs) -> dict:
    """``reproduce(**kwargs)`` with its steps on a bar ``reproduce PAPER`` (``progress``), as
    :func:`.progress.Counting` shows a job."""
    from .progress import Counting, Progress

    with Progress(None, quiet=not progress, desc=f"reproduce {paper}", unit=unit) as bar:
        return reproduce(progress=Counting(bar, job=True), **kwargs)


#: paper name -> reproduction (output_dir, data_dir, quick, progress: show a bar, random_state) -> dict
PAPERS = {"surveys": _surveys, "pcl": _pcl, "swapping": _swapping, "diversity": _diversity, "km": _km}


def cmd_reproduce(args) -> int:
    result = PAPERS[args.paper](output_dir=args.output_dir, data_dir=args.data_dir, quick=args.quick,
                                progress=True, random_state=args.seed)
    print(result["text"], end="")
    return 0


def add_parser(sub) -> None:
    r = command(sub, "reproduce", epilog=example(
        "probanon reproduce surveys --quick --output-dir reproduce     # then open reproduce/surveys.html",
        "probanon reproduce pcl --data-dir ../shared/data --output-dir reproduce"))
    r.add_argument("paper", choices=sorted(PAPERS),
                   help="surveys: p-probabilistic k-anonymous microaggregation for surveys (paper 1, Sec. VII); "
                        "pcl: k-anonymous Lloyd (PCL) against MDAV (paper 3, Sec. 7); "
                        "swapping: probabilistic k-anonymity by swapping, Tables VI-XI (paper 2, Sec. V); "
                        "diversity: (l, delta)-diversity, N values, Figs. 1-2 and the linkage attack (paper 4); "
                        "km: probabilistic k^m-anonymity, gamma, Example 1 and a synthetic CDR grid (paper 5)")
    add_output(r, "--output-dir", default="report", folder=lambda args: [f"{args.paper}.{e}" for e in ("html", "txt", "json")],
               help="directory for the HTML page, PNG figures, text and JSON (existing ones: --force)")
    r.add_argument("--data-dir", default=None,
                   help="directory holding casc/census.csv (surveys), adult/adult.csv (pcl) or casc/census.csv and "
                        "casc/eia.csv (swapping); not used by diversity or km (synthetic settings) "
                        "(default: the data sets packaged with probanon, see 'probanon datasets')")
    r.add_argument("--quick", action="store_true",
                   help="fewer records, grid points or runs (about 10 s; not comparable with the paper)")
    r.add_argument("--seed", type=seed, default=2016,
                   help="seed of the simulations, synthetic data, jitter and permutations")
    r.set_defaults(func=cmd_reproduce)
