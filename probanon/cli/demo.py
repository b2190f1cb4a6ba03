"""``probanon demo``: the end-to-end run on built-in synthetic data, with its HTML report."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from .options import add_output, positive_int, example, seed
from .parser import command
from ..data import synthetic_survey
from ..metrics import format_information_loss, k_achieved, utility_report
from ..outputs import write_outputs
from .progress import Progress
from ..microagg import METHODS
from ..release import assign_roles, make_release, shuffle_stream


def demo_release_reports(folder, data, qi, X, released, seed, release=None) -> None:
    """The demo's risk-utility reports (:mod:`probanon.release_report`) of its MDAV release at
    k = 5, with V-MDAV, PCL, individual ranking and MDAV-SWAP (informed) on its map; the
    external one lists the variables of ``release`` (:class:`probanon.release.Release`) with their treatment."""
    from ..release_report import assess, external_report, internal_report
    from ..swapping import swap

    keys = list(qi)
    others = {"V-MDAV": METHODS["vmdav"](5).fit_transform(X), "PCL": METHODS["pcl"](5, random_state=seed).fit_transform(X),
              "individual ranking": METHODS["ranking"](5).fit_transform(X),
              "MDAV-SWAP": swap(data[qi + ["health_spending"]], 5, "mdav-swap", ["health_spending"],
                                random_state=seed).released[qi].to_numpy()}
    compared = [assess(label, X, Y, pd.DataFrame(Y, columns=keys), keys, 5, probabilistic=label == "MDAV-SWAP")
                for label, Y in others.items()]
    confidential = ["health_spending", "savings"]
    original = data[keys + confidential]
    mine = original.assign(**dict(zip(keys, np.asarray(released).T)))
    method = "MDAV microaggregation of the quasi-identifiers, k = 5"
    internal_report(original, mine, keys, [], 5, method, compared=compared, label="MDAV (this release)",
                    mechanism="microaggregation", confidential=confidential).write(Path(folder) / "internal")
    external_report(original, mine, keys, [], 5, method, dataset="release_mdav_k5.csv", mechanism="microaggregation",
                    confidential=confidential, variables=None if release is None else release.actions,
                    ).write(Path(folder) / "external")


DEMO_FILES = ("index.html", "il_vs_k.png", "risk_vs_k.png", "release_mdav_k5.csv", "function_mdav_k5.json",
              "evaluation_mdav_k5.json", "attack_mdav_k5.json", "survey_spec.json", "survey_release.csv",
              "release_report/internal/index.html", "release_report/external/index.html",
              "survey_release_report.json")
SURVEY_DEMO = {"records": 600, "k": 5, "participation": 0.7, "risk": 0.05, "columns": ["age", "income"],
               "answers": ["health_spending", "savings"]}


def demo_survey(out_dir, rep, records: int, seed: int, quiet: bool = True) -> dict | None:
    """The demo's survey part (paper 1, Sec. III, locally trusted anonymisation): a specification
    designed on a synthetic model population (:data:`SURVEY_DEMO`, at most ``records`` records),
    published on a collector (a temporary SQLite database, a free loopback port), every person
    responding with probability pi through :func:`probanon.service.client.respond` (the cell is
    computed on the respondent's side), the survey closed and its release fetched by an analyst.
    Writes survey_spec.json, survey_release.csv and survey_release_report.json into ``out_dir``
    and adds a section to ``rep``; returns the release report (None without the service extra)."""
    import datetime as dt
    import tempfile

    from ..attacks import GUARANTEES
    from ..survey.design import design
    from ..survey.spec import build_spec

    heading = "Survey with uncertain participation (paper 1): design, collector, release"
    from ..service import client, missing_extra, office, server

    if missing_extra():
        rep.text(heading, f"Not run: the collector needs the service extra ({missing_extra()} is missing; "
                          "pip install 'probanon[service]').")
        return None

    c = SURVEY_DEMO
    k, pi, risk, qi, answered = c["k"], c["participation"], c["risk"], c["columns"], c["answers"]
    population = synthetic_survey(min(records, c["records"]), random_state=seed)
    d = design(population[qi], k, pi, risk)
    spec = build_spec(d)
    spec_text = json.dumps(spec, indent=1, allow_nan=False)
    now = dt.datetime.now(dt.timezone.utc).replace(microsecond=0)
    answers = [{"name": a, "type": "number", "min": 0, "label": a.replace("_", " ")} for a in answered]
    opens, closes = (now - dt.timedelta(hours=1)).isoformat(), (now + dt.timedelta(days=1)).isoformat()
    questions = {"age": {"label": "Your age", "unit": "years"}, "income": {"label": "Your yearly income", "unit": None}}
    responds = np.random.default_rng(np.random.SeedSequence(seed).spawn(3)[2]).random(len(population)) < pi
    with tempfile.TemporaryDirectory(prefix="probanon-demo-") as tmp:
        database = str(Path(tmp) / "collector.db")
        admin = server.init_admin(database)
        with server.running(database) as base:
            created = office.publish(base, admin, spec_text, answers, opens, closes, "probanon demo survey",
                                     questions, open_survey=True)  # simulated respondents, no invitations
            sid = created["id"]
            with Progress(None, quiet=quiet, desc="respondents", total=int(responds.sum())) as bar:
                for i in bar.iterate(np.flatnonzero(responds)):
                    person = population.iloc[i]
                    client.respond(base, sid, {q: float(person[q]) for q in qi},
                                   {a: float(person[a]) for a in answered}, expected_digest=created["digest"])
            office.close(base, admin, sid, "demo: every respondent answered")
            released = office.release(base, office.analyst(base, admin, "demo analyst")["token"], sid)
    report = released["report"]
    release = pd.DataFrame.from_records(released["records"], columns=released["columns"])
    write_outputs({out_dir / "survey_spec.json": spec_text, out_dir / "survey_release.csv": release,
                   out_dir / "survey_release_report.json": json.dumps(report, indent=2, allow_nan=False)})

    failures, cells = report["failures"], report["cells"]
    rep.text(heading,
             f"{GUARANTEES['survey'].text()} A model population of {len(population)} synthetic records (seed {seed}; "
             f"quasi-identifiers {', '.join(qi)}) gives the design: k = {k}, participation pi = {pi}, acceptable cell "
             f"failure {risk}, so every cell holds n_min = {d.n_min} or more records ({len(d.sizes)} cells of "
             f"{d.sizes.min()}..{d.sizes.max()}), each failing (0 < responses < k) with probability <= {risk} "
             f"(Algorithm A). The specification (survey_spec.json, digest {spec['digest']}) was published on a "
             f"collector (probanon.service, a temporary SQLite database on 127.0.0.1); each person responded with "
             f"probability {pi}: {int(responds.sum())} respondents, each through probanon.service.client.respond, "
             "which verifies the survey document (everything asked, the specification's digest included) "
             "against the invitation's digest, computes the cell on the "
             f"respondent's side and sends only the cell and the answers ({', '.join(answered)}), never the "
             f"{', '.join(qi)}. The survey was closed, and an analyst fetched the release (survey_release.csv: "
             "each response as its cell's centroid and its answers, in random order; cells that ended with "
             f"0 < responses < k suppressed) and its report (survey_release_report.json).")
    from ..report import shared_decimals

    roles = {"cell": "cell index", **{q: "cell centroid" for q in qi}, **{a: "answer" for a in answered}}
    summary = [{"column": col, "released as": roles.get(col, ""), "records": int(release[col].count()),
                "distinct values": int(release[col].nunique()),
                **shared_decimals({"mean": release[col].mean(), "min": release[col].min(), "max": release[col].max()})}
               for col in release.columns]
    rep.table([dict(row, mean="", min="", max="") if row["column"] == "cell" else row for row in summary])
    rep.text(None, "Cell failures predicted by the design against those observed in this collection, and the "
                   "release rule's outcome: a failed cell is suppressed, so every released cell holds >= k "
                   "responses whatever the participation was.")
    rep.table([
        {"quantity": "responses (participation)", "predicted": f"{pi * report['records']:.1f} ({pi})",
         "observed": f"{report['responses']} ({report['participation']['observed']:.3f})"},
        {"quantity": "failing cells (0 < responses < k)", "predicted": f"{failures['predicted_failing_cells']:.2f}",
         "observed": str(failures["observed_failing_cells"])},
        {"quantity": "some cell fails (table failure)", "predicted": f"{failures['predicted_table_failure']:.3f}",
         "observed": "yes" if failures["observed_failing_cells"] else "no"},
        {"quantity": "achieved k of the release", "predicted": f">= {k}", "observed": str(report["achieved_k"])},
        {"quantity": "suppressed records (cells)", "predicted": "",
         "observed": f"{report['suppressed_records']} ({report['suppressed_cells']})"},
        {"quantity": "released records", "predicted": "", "observed": str(report["released_records"])},
    ])
    failed = [c for c in cells if c["failed"]]
    if failed:
        rep.text(None, "The failed cells:")
        rep.table([{"cell": c["cell"], "records": c["size"], "responses": c["responses"],
                    "predicted failure": c["predicted_failure"], "released": "yes" if c["released"] else "no"}
                   for c in failed])
    return report


def cmd_demo(args) -> int:
    from ..attacks import attack
    from ..metrics import information_loss, record_linkage
    from ..report import FLAG_MARK, Report, flag, line_figure

    out_dir = Path(args.output_dir)
    data = synthetic_survey(args.records, random_state=args.seed)
    qi = ["age", "income", "household", "hours"]
    X = data[qi].to_numpy(float)
    ks = [2, 3, 4, 5, 7, 10, 15, 20]
    methods = {"MDAV": "mdav", "V-MDAV": "vmdav", "PCL": "pcl", "individual ranking": "ranking"}
    rows, il_series, risk_series = [], {}, {}
    with Progress(None, quiet=args.quiet, desc="methods", total=len(methods)) as bar:
        for label, name in bar.iterate(methods.items()):
            ils, risks = [], []
            for k in ks:
                model = METHODS[name](k, random_state=args.seed) if name == "pcl" else METHODS[name](k)
                released = model.fit_transform(X)
                ils.append(information_loss(X, released))
                risks.append(record_linkage(X, released))
                achieved = k_achieved(pd.DataFrame(released))
                rows.append({"method": label, "k": k, "k-anonymous": "yes" if achieved >= k else "NO",
                             "k achieved": achieved, "information loss %": ils[-1],
                             "record linkage": risks[-1]})
            risk_series[label] = (ks, risks)
            if name != "ranking":  # not k-anonymous: its IL is not comparable with the others'
                il_series[label] = (ks, ils)
    main = METHODS["mdav"](5).set_output(transform="default")
    roles = assign_roles(data.columns, qi, ["health_spending", "savings"], ["id"])
    release = make_release(data, roles, replaced=dict(zip(qi, main.fit_transform(data[qi]).T)),
                           actions={"key": "key: replaced by its MDAV group mean (k = 5)"},
                           random_state=shuffle_stream(args.seed))
    evaluation = utility_report(data[qi], data[qi].assign(**dict(zip(qi, main.transform(data[qi]).T)))).to_dict()
    evaluation["k_achieved"] = k_achieved(release.data, qi)
    evaluation["record_linkage"] = record_linkage(X, main.transform(data[qi]))
    confidential = ["health_spending", "savings"]
    risk = attack(data, release.data, qi, confidential, mechanism="microaggregation", k=5, runs=1,
                  link=release.link["released_row"].to_numpy() - 1,
                  random_state=np.random.default_rng(np.random.SeedSequence(args.seed).spawn(2)[1]))
    out_dir.mkdir(parents=True, exist_ok=True)
    demo_release_reports(out_dir / "release_report", data, qi, X, main.transform(data[qi]), args.seed, release)
    write_outputs({
        out_dir / "release_mdav_k5.csv": release.data,
        out_dir / "function_mdav_k5.json": main.function_.to_json(indent=1),
        out_dir / "evaluation_mdav_k5.json": json.dumps(evaluation, indent=2, allow_nan=False),
        out_dir / "attack_mdav_k5.json": json.dumps(risk.to_dict(), indent=2, allow_nan=False),
    })

    rep = Report("probanon demo: microaggregation of a synthetic survey")
    rep.text("Data", f"{len(data)} synthetic records (seed {args.seed}); quasi-identifiers: {', '.join(qi)}; "
             "confidential: health_spending, savings; direct identifier: id (removed from the release). "
             "Information loss IL = 100 SSE/SST on z-scored data; record linkage = expected share of records "
             "an intruder who knows every original quasi-identifier re-identifies by nearest neighbour.")
    rep.figure("il_vs_k", line_figure(il_series, "k", "information loss (%)",
                                      "Information loss against k (k-anonymous methods)"),
               "Information loss against k for MDAV, V-MDAV and PCL (each group of at least k records)")
    rep.figure("risk_vs_k", line_figure(risk_series, "k", "record linkage (share re-identified)",
                                        "Disclosure risk against k"),
               "Record linkage against k, with individual ranking, whose low information loss comes from "
               "not being k-anonymous: each column is ranked alone, so records stay close to their originals "
               "and are re-identified far more often")
    mean_il = {label: float(np.mean(ils)) for label, (_, ils) in il_series.items()}
    best = min(mean_il, key=mean_il.get)
    ranking_k = sorted({r["k achieved"] for r in rows if r["method"] == "individual ranking"})
    rep.text("Risk beside utility", f"Individual ranking is not k-anonymous (k achieved: "
             f"{', '.join(map(str, ranking_k))} for k = {ks[0]}..{ks[-1]}): it is listed for its risk only, never "
             f"as a method to choose. Among the k-anonymous methods {best} has the lowest mean information loss "
             f"({mean_il[best]:.2f}% over these k).")
    rep.table(rows, decimals={"information loss %": 3, "record linkage": 4})
    rep.links("Risk-utility reports of the release at k = 5", "The office's internal report (risk before and "
              "after, utility, the risk-utility map, the attack suite) and the publishable one (dataset, variables, "
              "method, guarantee, aggregate utility), as 'probanon report' writes them:",
              {"internal report (for the office)": "release_report/internal/index.html",
               "external report (to publish with the data)": "release_report/external/index.html"})
    rep.text("Release at k = 5 (MDAV)", f"k achieved = {evaluation['k_achieved']}, IL = "
             f"{format_information_loss(evaluation['information_loss'])}, "
             f"record linkage = {evaluation['record_linkage']:.4f}, "
             f"max |correlation difference| = {evaluation['correlation_difference_max']:.4f}. Records in random "
             "order, id removed. Files: release_mdav_k5.csv, function_mdav_k5.json (the publishable "
             "microaggregation function), evaluation_mdav_k5.json, attack_mdav_k5.json (the attack suite).")
    above = (f"Above the claimed bound: {', '.join(risk.exceeded)}." if risk.exceeded else
             "No intruder's success is significantly above the claimed bound.")
    rep.text("Risk of the release at k = 5: the attack suite beside the claimed bound",
             f"{risk.guarantee.text()} Every intruder of the attack suite ('probanon attack') knows every person's "
             f"original {', '.join(qi)}, the release and the mechanism (microaggregation, k = 5), never the "
             f"confidential {', '.join(confidential)}; groups it rebuilds: {risk.groups_note}. Success = share of "
             f"the {risk.n_records} people linked to their own released record in one run (MDAV is deterministic: "
             "more runs on this release would repeat the links of the deterministic intruders, not add evidence), "
             f"with its {risk.results[0].confidence:.0%} Clopper-Pearson interval beside the claimed bound 1/5 = "
             f"{risk.bound:.2f}; a success whose interval lies entirely above the bound is marked {FLAG_MARK} (red). "
             + above)
    rep.table([dict(row, success=flag(row["success"], r.lower_exceeds_bound, limit=f"{r.bound:.4f}"))
               for row, r in zip(risk.rows(), risk.results)])
    rep.text(None, "What each intruder knows and does: " + "; ".join(f"{r.rule}: {r.knows}" for r in risk.results)
             + ".")
    demo_survey(out_dir, rep, args.records, args.seed, quiet=args.quiet)
    path = rep.write(out_dir)
    print(f"report written to {path}", file=sys.stderr)
    return 0



def add_parser(sub) -> None:
    d = command(sub, "demo", epilog=example(
        "probanon demo --output-dir report      # then open report/index.html"))
    add_output(d, "--output-dir", default="report", folder=lambda args: DEMO_FILES, metavar="DIR",
               help="folder of the report and its files (default: report)")
    d.add_argument("--records", type=positive_int, default=2000, help="synthetic records (default 2000)")
    d.add_argument("--seed", type=seed, default=2026, help="seed of the synthetic data and the methods (default 2026)")
    d.add_argument("--quiet", action="store_true", help="no progress bar")
    d.set_defaults(func=cmd_demo)

