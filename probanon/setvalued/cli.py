"""``probanon km ...``: probabilistic k^m-anonymity of set-valued data (paper 5).

Each subcommand is a ``cmd_*`` function registered in :func:`add_parser`.
"""

from __future__ import annotations

import sys

from .cdr import TABLE_II, generate_cdr, write_cdr


def cmd_generate_cdr(args) -> int:
    from tqdm import tqdm

    with tqdm(total=2 * args.users, desc="generate-cdr", unit="user", unit_scale=True, file=sys.stderr,
              disable=args.quiet) as bar:
        cdr = generate_cdr(args.users, random_state=args.seed, progress=bar.update)
        towers_path, records_path = write_cdr(cdr, args.output, progress=bar.update)
    sizes = cdr.sizes
    print(f"{cdr.n_users:,} users, {cdr.n_towers} towers in {cdr.area_km2:.1f} km^2; record size mean "
          f"{sizes.mean():.2f}, sd {sizes.std(ddof=1):.2f}, min {sizes.min()}, max {sizes.max()}; "
          f"wrote {towers_path} and {records_path}", file=sys.stderr)
    return 0


def _positive_int(text: str) -> int:
    import argparse

    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def add_parser(sub) -> None:
    km = sub.add_parser("km", help="probabilistic k^m-anonymity of set-valued data (paper 5)")
    ksub = km.add_subparsers(dest="km_command", required=True)

    g = ksub.add_parser("generate-cdr", help="synthetic call-detail records calibrated to the paper's Table II")
    g.add_argument("--users", type=_positive_int, default=TABLE_II["users"],
                   help=f"number of users (default: the paper's {TABLE_II['users']:,})")
    g.add_argument("-o", "--output", required=True, metavar="DIR",
                   help="directory for towers.csv (tower,x,y in metres) and records.txt (FIMI)")
    g.add_argument("--seed", type=int, default=None, help="random seed (same seed, same data)")
    g.add_argument("--quiet", action="store_true", help="no progress bar")
    g.set_defaults(func=cmd_generate_cdr)
