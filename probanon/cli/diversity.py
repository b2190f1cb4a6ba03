"""``probanon diversity ...``: plan and release ((l, delta)-diversity, paper 4); the ``check``
and ``attack`` subcommands come from :mod:`probanon.diversity.checks_cli`."""

from __future__ import annotations

import json
import sys

from .options import add_input, add_output, column_names, example, positive_int, summary_lines
from .parser import command
from ..data import read_table
from ..diversity.distribution import check_margin, read_distribution
from ..diversity.planning import M_RULES, METHODS, pareto_front, plan_diversity
from ..diversity.release import count_note, load_plan, release_counts, release_summary


def cmd_plan(args) -> int:
    from .progress import Counting, Progress

    dist = read_distribution(args.distribution, order=args.order, margin=check_margin(args.margin),
                             normalize=args.normalize)
    if dist.renormalized_from is not None:
        print(f"diversity plan: the probabilities summed to {dist.renormalized_from!r}; divided by that sum "
              "(--normalize)", file=sys.stderr)
    note = f"diversity plan: {dist.n_qi} QI values x {dist.n_sensitive} sensitive values"
    with Progress(note, quiet=args.quiet, desc="plan", unit=" partitions") as progress:
        plan = plan_diversity(dist, args.l, args.delta, t=args.datasets, p=args.p, beta=args.beta,
                              budget=args.budget, method=args.method, m_rule=args.m_rule, progress=Counting(progress))
    out = plan.to_dict()
    if args.front:
        with Progress(None, quiet=args.quiet, desc="Pareto front", unit=" class counts") as progress:
            front = pareto_front(dist, plan.l, plan.delta, method=args.method, m_rule=args.m_rule,
                                 progress=Counting(progress))
        out["front"] = front.to_dict(orient="records")
    if args.output:
        args.outputs.write({args.output: plan.to_json(indent=1)})
    print(json.dumps(out, allow_nan=False) if args.json else _plan_summary(plan, out.get("front"), args.output))
    return 0


def _plan_summary(plan, front, output) -> str:
    """``diversity plan`` in words (paper 4, Algorithm 1): the classes, the threshold p, the number
    of samples N and the guarantee they give; the Pareto front as a table."""
    l, qi = plan.l, ", ".join(map(str, plan.qi_columns)) or "the QI value"
    m_rule = "Lemma 4.3's bound on the class count" if plan.m_rule == "bound" else "the real class count"
    rows = [("classes", f"{plan.classes:,} equivalence classes of the values of {qi} ({len(plan.qi_keys):,} values; "
                        f"{'Algorithm 2, greedy' if plan.method == 'greedy' else 'Algorithm 3, P = P_Q x P_S'})"),
            ("threshold p", f"{plan.p:.4g}: every class holds at least l = {l} sensitive values s with "
                            f"P(class, s) >= p (the smallest such mass is {plan.bottleneck:.4g}); p can reach at most "
                            f"p_l = {plan.p_l:.4g}, the l-th largest P(s)"
                            + (f"; margin eps = {plan.margin:g} added to p" if plan.margin else "")),
            ("samples N", f"{plan.n_samples:,} records per release = ceil(ln(m l / delta) / ln(1 / (1 - p))) = "
                          f"ceil({plan.n_samples_exact:,.2f}), m = {plan.m:g} ({m_rule})"),
            ("guarantee", f"a release of N records drawn independently from the distribution shows at least {l} "
                          f"distinct sensitive values in every class with probability >= {1 - plan.delta:g} "
                          f"(delta = {plan.delta:g}, Theorem 4.4)")]
    if plan.t > 1:
        rows.append(("", f"{plan.t} releases linked on a person's QI value: with probability >= "
                         f"{1 - plan.delta_after_linkage:g} (t delta = {plan.delta_after_linkage:g}, Theorem 4.5)"))
    rows.append(("plan", f"written to {output} (the classes of every QI value)" if output else
                 "not written (-o PLAN.json saves it for 'diversity release')"))
    text = summary_lines(rows)
    if front:
        table = [("classes", "threshold p", "samples N")] + [(f"{r['classes']:,}", f"{r['p']:.4g}",
                                                              f"{r['n_samples']:,}") for r in front]
        widths = [max(len(row[j]) for row in table) for j in range(3)]
        text += ("\nPareto front (more classes need more samples; each row: the fewest samples for its classes):\n"
                 + "\n".join("  " + "  ".join(v.rjust(w) for v, w in zip(row, widths)) for row in table))
    return text


def cmd_release(args) -> int:
    plan = load_plan(args.plan)
    sample = read_table(args.sample)
    released = release_counts(plan, sample, args.sensitive, allow_fewer=args.allow_fewer)
    args.outputs.write({args.output: released})
    s = release_summary(plan, released)
    sensitive = args.sensitive or plan.sensitive_column
    fate = {c: ("quasi-identifier: generalised to its class" if c in plan.qi_columns else
                "sensitive: counted per class" if c == sensitive else "not released") for c in sample.columns}
    width = max(len(str(c)) for c in fate)
    print(f"released {s['records']} records in {s['non_empty_classes']} of {s['classes']} classes; "
          f"distinct l achieved = {s['l_achieved']} (plan: l = {s['l']}, N = {plan.n_samples}); counts only, "
          "no record-level data, each class named by its QI values (class_values); columns:\n"
          + "\n".join(f"  {str(c):<{width}}  {a}" for c, a in fate.items()) + f"\n{count_note(plan, released)}",
          file=sys.stderr)
    return 0


def _order(text: str):
    """argparse type of ``--order``: None (appearance), "sorted", or the QI columns to sort by."""
    return None if text == "appearance" else text if text == "sorted" else column_names(text)


def add_parser(sub) -> None:
    d = command(sub, "diversity", epilog=example(
        "probanon diversity plan --distribution pmf.csv -l 3 --delta 0.05 -o plan.json",
        "probanon diversity release plan.json adult.csv --sensitive occupation -o counts.csv",
        "probanon diversity check counts.csv -k 20 -l 3"))
    dsub = d.add_subparsers(dest="diversity_command", required=True)

    p = dsub.add_parser("plan", help="classes, threshold p and number of samples N from a joint distribution",
                        epilog=example(
        "# pmf.csv: columns sex, race (the QI), sensitive (e.g. the occupation), probability (summing to 1)",
        "probanon diversity plan --distribution pmf.csv -l 3 --delta 0.05 -o plan.json",
        "probanon diversity plan --distribution pmf.csv -l 3 --delta 0.05 --datasets 4 --front"))
    add_input(p, "--distribution", required=True, metavar="FILE",
                   help="CSV/Parquet: the QI columns, then 'sensitive', then 'probability'")
    p.add_argument("-l", type=positive_int, required=True, help="diversity l (distinct sensitive values per class)")
    p.add_argument("--delta", type=float, required=True, help="failure probability per release, in (0, 1)")
    p.add_argument("--datasets", type=int, default=1, metavar="T",
                   help="number of releases that may be linked (guarantee (l, T delta), default 1)")
    choice = p.add_mutually_exclusive_group()
    choice.add_argument("--budget", type=int, metavar="N", help="most classes subject to N <= budget samples")
    choice.add_argument("--p", type=float, help="the threshold p itself")
    choice.add_argument("--beta", type=float, help="p = beta (p_l - margin), beta in (0, 1]")
    p.add_argument("--order", type=_order, default=None,
                   help="QI order: 'appearance' (default), 'sorted', or columns to sort by, e.g. 'sex,age'")
    p.add_argument("--margin", type=float, default=0.0,
                   help="total-variation margin eps of an estimated distribution (threshold p + eps)")
    p.add_argument("--method", choices=METHODS, default="greedy",
                   help="greedy (Algorithm 2) or independent (Algorithm 3, P = P_Q x P_S)")
    p.add_argument("--m-rule", choices=M_RULES, default="bound",
                   help="m in N: Lemma 4.3's bound (default) or the real class count")
    p.add_argument("--front", action="store_true", help="also list the Pareto front of classes against N")
    p.add_argument("--normalize", action="store_true",
                   help="accept probabilities whose sum is within 1e-6 of 1 and divide them by it (say so on stderr)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--json", action="store_true", help="the plan as one JSON object on stdout instead of the summary")
    add_output(p, "-o", "--output", metavar="PLAN.json", help="save the plan")
    p.set_defaults(func=cmd_plan)

    r = dsub.add_parser("release", help="counts per (class, sensitive value) of a sample under a plan",
                        epilog=example(
        "probanon diversity release plan.json adult.csv --sensitive occupation -o counts.csv"))
    add_input(r, "plan", metavar="PLAN", table=False, help="the plan (diversity plan -o PLAN.json)")
    add_input(r, "sample", metavar="SAMPLE",
              help="the sample: N or more records drawn from the planned distribution, with the QI columns and "
                   "the sensitive column")
    add_output(r, "-o", "--output", required=True, table=True,
               help="the count table: class, sensitive, count (no record-level data)")
    r.add_argument("--sensitive", help="the sample's sensitive column (default: the plan's)")
    r.add_argument("--allow-fewer", action="store_true",
                   help="release even with fewer records than the plan's N (no guarantee)")
    r.set_defaults(func=cmd_release)

    try:
        from .diversity_checks import add_check_commands
    except ModuleNotFoundError as exc:  # the check/attack commands are not installed yet
        if exc.name != f"{__package__}.checks_cli":
            raise
    else:
        add_check_commands(dsub)
