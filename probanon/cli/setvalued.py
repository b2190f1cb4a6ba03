"""``probanon km ...``: probabilistic k^m-anonymity of set-valued data (paper 5).

Each subcommand is a ``cmd_*`` function registered in :func:`add_parser`.
"""

from __future__ import annotations

import contextlib
import json
import sys
import textwrap
from pathlib import Path

from .._validation import check_k
from .options import SUMMARY_WIDTH, add_input, add_output, example, positive_int, seed
from .parser import command
from .options import add_cluster_options, cluster_from_args
from ..outputs import TABLE_FORMATS
from .progress import Counting, Progress
from ..release import record_order, shuffle_stream
from ..errors import InputError, ParameterError
from ..setvalued.cdr import TABLE_II, generate_cdr, write_cdr


def _partition_path(out) -> Path:
    """The partition JSON written beside the released records ``out``."""
    return Path(str(out) + ".partition.json")


def cmd_generate_cdr(args) -> int:
    with Progress(None, quiet=args.quiet, total=2 * args.users, desc="generate-cdr", unit="user",
                  unit_scale=True) as bar:  # the users made, then written
        cdr = generate_cdr(args.users, random_state=args.seed, progress=Counting(bar))
        towers_path, records_path = write_cdr(cdr, args.output, progress=Counting(bar))
    sizes = cdr.sizes
    print(f"{cdr.n_users:,} users, {cdr.n_towers} towers in {cdr.area_km2:.1f} km^2; record size mean "
          f"{sizes.mean():.2f}, sd {sizes.std(ddof=1):.2f}, min {sizes.min()}, max {sizes.max()}; "
          f"wrote {towers_path} and {records_path}", file=sys.stderr)
    return 0


def _load_constraints(args, data):
    from ..setvalued.constraints import (
        constraints_from_adjacency,
        constraints_from_coordinates,
        constraints_from_hierarchy,
    )

    items = [str(x) for x in data.item_labels]
    if args.hierarchy:
        return constraints_from_hierarchy(args.hierarchy, items=items)
    if args.adjacency:
        return constraints_from_adjacency(args.adjacency, items=items)
    if args.coordinates:
        return constraints_from_coordinates(args.coordinates)  # unknown items: align_items
    return None


def _first_message(args, text: str) -> None:
    """A line on stderr before the slow part (a first compilation announces itself:
    :func:`probanon.cli.progress.announce_compilation`)."""
    if not args.quiet:
        print(f"{text} ...", file=sys.stderr, flush=True)


def _shardable(args) -> bool:
    """On a cluster, are the records sharded over the workers (a FIMI file, sampled levels only,
    no hierarchy), rather than loaded here with the r runs as tasks?"""
    sigmas = args.sigma if isinstance(args.sigma, tuple) else (args.sigma,)
    return (not any(str(args.input).lower().endswith(ending) for ending in TABLE_FORMATS)
            and not args.hierarchy and args.exact_upto == 0 and all(s < 1 for s in sigmas))


def cmd_anonymize(args) -> int:

    from ..setvalued.data import load_records
    from ..setvalued.cdr import _fimi_bytes
    from ..setvalued.generalize import anonymize, release_data
    from ..setvalued.sample_size import sample_size_plan

    if args.m < 1:
        raise ParameterError(f"m must be an integer >= 1, got {args.m}")
    sample_size_plan(args.sigma, args.k, args.m)  # k_l >= 1, sigma_l in (0, 1], one value or m
    if args.exact_upto < 0:
        raise ParameterError(f"--exact-upto must be >= 0, got {args.exact_upto}")
    if args.allow_root_merge and not args.hierarchy:
        raise ParameterError("--allow-root-merge applies to --hierarchy only")
    with contextlib.ExitStack() as stack:
        client = stack.enter_context(cluster_from_args(args))
        records = None
        if client is not None and _shardable(args):  # records read by the workers, sharded (issue 19.1)
            from ..distributed.km import ShardedRecords

            records = stack.enter_context(ShardedRecords(client, args.input))
        elif client is not None:  # records here, the r runs as tasks
            from ..distributed.km import runs_on_dask

            stack.enter_context(runs_on_dask(client))
        data = load_records(args.input) if records is None else records
        constraints = _load_constraints(args, data)
        for k in args.k if isinstance(args.k, tuple) else (args.k,):
            check_k(k, data.n_records)
        _first_message(args, f"anonymize: {data.n_records:,} records, {data.n_items:,} items, m = {args.m}"
                             + (f", {records.count} shards on the workers" if records is not None else ""))
        with Progress(None, quiet=args.quiet, total=args.runs * args.m, desc="anonymize", unit="level") as bar:
            if records is not None:
                result = records.anonymize(args.k, args.m, args.sigma, constraints, runs=args.runs,
                                           random_state=args.seed, progress=Counting(bar))
            else:
                result = anonymize(data, args.k, args.m, args.sigma, constraints, runs=args.runs,
                                   exact_upto=args.exact_upto, random_state=args.seed, progress=Counting(bar),
                                   allow_root_merge=args.allow_root_merge)
        if not result.satisfied:
            if result.hierarchy is not None:
                raise InputError(f"{result.hierarchy.failure()}; nothing written "
                                 f"(--allow-root-merge lets parts cross the roots)")
            bad = next(lv for lv in result.levels if not lv.satisfied)
            raise InputError(f"the constraints permit no merge that makes every {bad.l}-itemset "
                             f"{bad.k}-anonymous; nothing written")
        if records is not None:
            text = records.released(result)
        else:
            released = release_data(data, result)
            text = _fimi_bytes(released.record_indptr, released.record_items).tobytes()
    lines = text.decode("ascii").splitlines(True)
    order, link = record_order(len(lines), keep_order=args.keep_order, random_state=shuffle_stream(args.seed))
    spec = {"partition": result.mapping(), "err": result.err, "parts": result.n_parts,
            "k": result.k, "m": result.m, "sigma": result.sigma, "seed": result.seed,
            "levels": [{"l": lv.l, "k": lv.k, "sigma": lv.sigma, "method": lv.method, "gamma": lv.gamma,
                        "checked": lv.n_checked, "merges": lv.n_merges, "fraction": lv.fraction}
                       for lv in result.levels]}
    if result.hierarchy is not None:
        spec["hierarchy"] = result.hierarchy.to_dict()
    out = Path(args.output)
    contents = {out: "".join(lines[i] for i in order), _partition_path(out): json.dumps(spec, indent=1) + "\n"}
    if args.link:
        contents[args.link] = link
    args.outputs.write(contents)
    hier = "" if result.hierarchy is None else f" ({result.hierarchy.summary()})"
    print(f"{data.n_items:,} items generalised into {result.n_parts} parts (each item released as its part); "
          f"err {result.err:.6g}: {_error_in_words(result.err, constraints, args)}{hier}", file=sys.stderr)
    print(f"wrote {out} ({'input order kept' if args.keep_order else 'records in random order'}) and "
          f"{out}.partition.json" + (f"; private link file {args.link}: never publish it" if args.link else ""),
          file=sys.stderr)
    return 0


def _error_in_words(err: float, constraints, args) -> str:
    """What ``err`` (:func:`.constraints.partition_error`, paper 5, Sec. V-C) means for these
    constraints: a mean distance with coordinates, else the NCP, a share of the items."""
    if constraints is not None and constraints.centroids is not None:
        return (f"an item occurrence lies on average {err:.6g} from the centre of its part (in the units of "
                f"{args.coordinates}; paper 5's average approximation error)")
    return (f"an item occurrence is merged on average with {100 * err:.3g} % of the other items (the NCP of "
            "set-valued recoding; 0: nothing merged, 100 %: every item in one part)")


def _recorded(spec: dict, key: str, m: int | None, path: str, flag: str):
    """A value of the partition JSON (a number or one per level), cut to m levels."""
    value = spec.get(key)
    if value is None:
        raise InputError(f"{path} records no {key}; give {flag}")
    if isinstance(value, list):
        if m is not None and len(value) < m:
            raise InputError(f"{path} records {key} for l = 1..{len(value)} only; give {flag} for m = {m}")
        return tuple(value[:m]) if m is not None else tuple(value)
    return value


def cmd_check(args) -> int:
    """Exit 0 when every level's fraction reaches its sigma, 1 when one does not, 2 on an error."""

    from ..setvalued.check import check_release
    from ..setvalued.data import load_records
    from ..setvalued.sample_size import check_sigma

    try:
        spec = json.loads(Path(args.partition).read_text())
        partition = spec["partition"]
        if not isinstance(partition, dict):
            raise TypeError
    except OSError as exc:
        raise InputError(f"cannot read {args.partition}: {exc.strerror or exc}") from None
    except (ValueError, KeyError, TypeError):
        raise InputError(f"{args.partition}: not a partition JSON ({{\"partition\": {{item: part}}}})") from None
    m = args.m if args.m is not None else spec.get("m")
    if m is None:
        raise InputError(f"{args.partition} records no m; give -m")
    if isinstance(m, bool) or not isinstance(m, int) or m < 1:
        raise ParameterError(f"m must be an integer >= 1, got {m!r}")
    k = args.k if args.k is not None else _recorded(spec, "k", m, args.partition, "-k")
    if args.sigma is not None:
        sigma, source = args.sigma, "--sigma"
    else:
        sigma, source = _recorded(spec, "sigma", m, args.partition, "--sigma"), args.partition
    sigmas = sigma if isinstance(sigma, tuple) else (sigma,) * m
    if len(sigmas) != m:
        raise ParameterError(f"--sigma has {len(sigmas)} values for m = {m} levels")
    try:
        sigmas = tuple(check_sigma(x) for x in sigmas)
    except ParameterError as exc:
        raise (InputError(f"{args.partition}: {exc}") if source != "--sigma" else exc) from None
    data = load_records(args.input)
    records = ([str(x) for x in data.item_labels[data.record(u)]] for u in range(data.n_records))
    note = f"check: {data.n_records:,} records, every l-itemset for l = 1..{m} (exact enumeration)"
    with Progress(note, quiet=args.quiet, total=m * data.n_records, desc="check", unit="record",
                  unit_scale=True) as bar:
        result = check_release(records, partition, k, m, progress=Counting(bar))
    out = result.to_dict()
    for level, s in zip(out["levels"], sigmas):
        level["sigma"] = s
        level["satisfied"] = level["fraction"] >= s
    out["sigma"] = sigmas[0] if len(set(sigmas)) == 1 else list(sigmas)
    out["sigma_from"] = source
    out["satisfied"] = all(level["satisfied"] for level in out["levels"])
    print(json.dumps(out) if args.json else _check_summary(out, args, data.n_records))
    return 0 if out["satisfied"] else 1


def _check_summary(out: dict, args, records: int) -> str:
    """``km check`` in words: per level, how many distinct l-itemsets of the original records the
    release keeps k-anonymous, against sigma; then the verdict."""
    table = [("l", "k", "distinct l-itemsets", "k-anonymous", "fraction", "sigma", "")]
    table += [(str(lv["l"]), str(lv["k"]), f"{lv['itemsets']:,}", f"{lv['anonymous']:,}", f"{lv['fraction']:.6g}",
               f"{lv['sigma']:g}", "holds" if lv["satisfied"] else "FAILS") for lv in out["levels"]]
    widths = [max(len(row[j]) for row in table) for j in range(len(table[0]))]
    shown = out["sigma"] if not isinstance(out["sigma"], list) else ",".join(map(str, out["sigma"]))
    bad = [lv for lv in out["levels"] if not lv["satisfied"]]
    verdict = ("holds: every fraction reaches sigma" if not bad else
               f"FAILS at l = {bad[0]['l']}: fraction {bad[0]['fraction']:.6g} < sigma {bad[0]['sigma']}")
    head = (f"sigma-k^m-anonymity of the release described by {args.partition}, on the {records:,} original records of "
            f"{args.input}: every distinct l-itemset of l = 1..{len(out['levels'])} items enumerated, and counted "
            "k-anonymous when at least k records of the release hold its generalisation")
    return "\n".join(textwrap.wrap(head, SUMMARY_WIDTH, subsequent_indent="  ")
                     + ["  " + "  ".join(v.rjust(w) for v, w in zip(row, widths)).rstrip() for row in table]
                     + [f"result: sigma-k^m-anonymity {verdict} (sigma {shown} from {out['sigma_from']})"])


def cmd_uniqueness(args) -> int:
    from .progress import Progress

    from .._validation import check_random_state
    from ..setvalued.data import load_records
    from ..setvalued.sample_size import estimate_uniqueness, uniqueness_sample_size

    if args.m < 1:
        raise ParameterError(f"m must be an integer >= 1, got {args.m}")
    rng = check_random_state(args.seed)
    n_samples = uniqueness_sample_size(args.epsilon, args.delta)  # checks epsilon and delta
    data = load_records(args.input)
    _first_message(args, f"uniqueness: {data.n_records:,} records, {n_samples:,} samples per level")
    biggest = int(data.record_sizes.max())
    rows = []
    levels = range(1, min(args.m, biggest) + 1)
    with Progress(None, quiet=args.quiet, total=len(levels), desc="uniqueness", unit="level") as bar:
        for l in bar.iterate(levels):
            e = estimate_uniqueness(data, l, n_samples=n_samples, delta=args.delta, random_state=rng)
            rows.append({"l": l, "samples": e.n_samples, "unique": e.n_unique, "fraction": e.fraction,
                         "lower": e.lower, "upper": e.upper, "epsilon": e.epsilon, "delta": e.delta})
    print(json.dumps({"levels": rows}) if args.json else _uniqueness_summary(rows, args, data, biggest))
    return 0


def _uniqueness_summary(rows: list, args, data, biggest: int) -> str:
    """``km uniqueness`` in words (paper 5, Sec. VI-A): per l, the share of the distinct l-itemsets
    that a single record holds, estimated from uniform samples, with its Hoeffding interval."""
    confidence = f"{100 * (1 - args.delta):g} %"
    table = [("l", "sampled", "unique", "uniqueness", f"{confidence} interval")]
    table += [(str(r["l"]), f"{r['samples']:,}", f"{r['unique']:,}", f"{r['fraction']:.4f}",
               f"[{r['lower']:.4f}, {r['upper']:.4f}]") for r in rows]
    widths = [max(len(row[j]) for row in table) for j in range(len(table[0]))]
    head = (f"uniqueness of l-itemsets in {args.input} ({data.n_records:,} records, {data.n_items:,} items): the share "
            "of the distinct l-itemsets held by one record only, i.e. that single out a person to whoever knows "
            f"those l items; each estimated from uniform samples, within +-{args.epsilon:g} with probability >= "
            f"{1 - args.delta:g} (Hoeffding)")
    lines = textwrap.wrap(head, SUMMARY_WIDTH, subsequent_indent="  ")
    lines += ["  " + "  ".join(v.rjust(w) for v, w in zip(row, widths)) for row in table]
    if args.m > biggest:
        lines.append(f"  no record has more than {biggest} items: l = {biggest + 1}..{args.m} have no itemset")
    return "\n".join(lines)


def _values(cast):
    """argparse type: one value, or a comma-separated list of them (a tuple)."""
    import argparse

    def parse(text: str):
        try:
            values = tuple(cast(x) for x in text.split(","))
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a {cast.__name__} or a comma-separated list, got {text!r}") from None
        return values[0] if len(values) == 1 else values

    parse.__name__ = f"{cast.__name__} list"
    return parse


def add_parser(sub) -> None:
    km = command(sub, "km", epilog=example(
        "probanon km generate-cdr --users 20000 -o cdr --seed 1",
        "probanon km anonymize cdr/records.txt -k 20 -m 3 --sigma 0.99 --coordinates cdr/towers.csv -o rel.txt",
        "probanon km check cdr/records.txt rel.txt.partition.json -m 2"))
    ksub = km.add_subparsers(dest="km_command", required=True)

    g = ksub.add_parser("generate-cdr", help="synthetic call-detail records calibrated to the paper's Table II",
                        epilog=example("probanon km generate-cdr --users 20000 -o cdr --seed 1"))
    g.add_argument("--users", type=positive_int, default=TABLE_II["users"],
                   help=f"number of users (default: the paper's {TABLE_II['users']:,})")
    add_output(g, "-o", "--output", required=True, metavar="DIR", folder=lambda args: ("towers.csv", "records.txt"),
               help="directory for towers.csv (tower,x,y in metres) and records.txt (FIMI)")
    g.add_argument("--seed", type=seed, default=None, help="random seed (same seed, same data)")
    g.add_argument("--quiet", action="store_true", help="no progress bar")
    g.set_defaults(func=cmd_generate_cdr)

    a = ksub.add_parser("anonymize", help="sigma-k^m-anonymous global recoding (Algorithm 2, best of r runs)",
                        epilog=example(
        "probanon km anonymize cdr/records.txt -k 20 -m 3 --sigma 0.99 --coordinates cdr/towers.csv \\",
        "    --runs 2 --seed 1 -o rel.txt"))
    add_input(a, "input", help="records: FIMI text, or a CSV/Parquet of (record, item) pairs")
    a.add_argument("-k", type=_values(int), required=True,
                   help="k (at least k records per known itemset), or k_1,...,k_m per level")
    a.add_argument("-m", type=positive_int, required=True, help="largest adversary knowledge (items)")
    a.add_argument("--sigma", type=_values(float), required=True,
                   help="probability sigma in (0, 1], or sigma_1,...,sigma_m per level")
    cons = a.add_mutually_exclusive_group()
    add_input(cons, "--hierarchy", metavar="F", help="CSV child,parent (full-subtree recoding)")
    add_input(cons, "--adjacency", metavar="F", help="CSV of edges (parts must stay connected)")
    add_input(cons, "--coordinates", metavar="F", help="CSV item,x,y (contiguous Voronoi regions)")
    a.add_argument("--allow-root-merge", action="store_true",
                   help="with --hierarchy: let parts cross its roots (as under an implicit common root)")
    a.add_argument("--runs", type=positive_int, default=1, help="r independent runs, best kept (default 1)")
    a.add_argument("--exact-upto", type=int, default=0, metavar="L",
                   help="enumerate every l-itemset (sigma = 1) for l <= L (default 0)")
    a.add_argument("--seed", type=seed, default=None,
                   help="random seed of the runs and the record order (same seed, same release; keep it secret)")
    add_output(a, "-o", "--output", required=True, metavar="OUT", derived=(_partition_path,),
               help="released records (and OUT.partition.json)")
    a.add_argument("--keep-order", action="store_true",
                   help="keep the input's record order (default: a random order, seeded by --seed)")
    add_output(a, "--link", metavar="FILE", table=True,
               help="also write the private link file original_row -> released_row (never publish it)")
    a.add_argument("--quiet", action="store_true", help="no progress bar")
    add_cluster_options(a, "the anonymization (a FIMI file: its records sharded over the workers, which read "
                           "it: a path they can reach; otherwise the r runs)")
    a.set_defaults(func=cmd_anonymize)

    c = ksub.add_parser("check", help="exact per-l fractions of k-anonymous l-itemsets of a release (small data)",
                        epilog=example(
        "probanon km check cdr/records.txt rel.txt.partition.json -m 2   # k and sigma from the partition file"))
    add_input(c, "input", help="the ORIGINAL records")
    add_input(c, "partition", table=False, help="OUT.partition.json written by anonymize")
    c.add_argument("-k", type=_values(int), default=None,
                   help="k, or k_1,...,k_m per level (default: those recorded in the partition JSON)")
    c.add_argument("-m", type=positive_int, default=None, help="largest itemset size checked (default: the recorded m)")
    c.add_argument("--sigma", type=_values(float), default=None,
                   help="sigma, or sigma_1,...,sigma_m (default: those recorded in the partition JSON); "
                        "exit status 1 when some level's fraction is below its sigma")
    c.add_argument("--quiet", action="store_true", help="no progress bar")
    c.add_argument("--json", action="store_true", help="one JSON object on stdout instead of the summary")
    c.set_defaults(func=cmd_check)

    u = ksub.add_parser("uniqueness", help="uniqueness of l-itemsets (l = 1..m) with Hoeffding intervals",
                        epilog=example("probanon km uniqueness cdr/records.txt -m 3 --seed 1"))
    add_input(u, "input", help="records: FIMI text, or a CSV/Parquet of (record, item) pairs")
    u.add_argument("-m", type=positive_int, required=True, help="largest itemset size l estimated (l = 1..m)")
    u.add_argument("--epsilon", type=float, default=0.01,
                   help="half-width of each estimate's interval, in (0, 1) (default 0.01; sets the samples drawn)")
    u.add_argument("--delta", type=float, default=0.01,
                   help="probability that an interval misses, in (0, 1) (default 0.01)")
    u.add_argument("--seed", type=seed, default=None, help="seed of the samples (default: fresh entropy)")
    u.add_argument("--quiet", action="store_true", help="no progress bar")
    u.add_argument("--json", action="store_true", help="one JSON object on stdout instead of the summary")
    u.set_defaults(func=cmd_uniqueness)
