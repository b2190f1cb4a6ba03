"""Benchmark of the collector's submission endpoint (``POST /api/surveys/{id}/submissions``).

Starts ``probanon serve`` as a subprocess on a fresh SQLite file (and on a fresh PostgreSQL
database with ``--postgres URL`` or PROBANON_TEST_POSTGRES), publishes one survey and sends
``--count`` valid submissions from ``--clients`` client processes (asyncio + aiohttp) holding
``--connections`` concurrent requests in all, on loopback (closed loop; with ``--rate R``, open
loop: R new submissions per second whatever the answers, latency counted from arrival). Prints, per backend, the throughput
(acknowledged submissions per second of wall time, first request to last answer), the p50 and p99
latency of one request, and, read back from the database after the server has stopped, the
acknowledged keys missing (lost), keys stored more than once (duplicates) and rows nobody was told
about (unacknowledged). Each run uses a new database and a new server; ``--repeat`` runs per
backend, best and median reported. The server's CPU time (from /proc) shows whether it is the
bottleneck.

Run from the repository root::

    PYTHONPATH=. .venv/bin/python benchmarks/service.py
    PYTHONPATH=. .venv/bin/python benchmarks/service.py --count 5000 --repeat 1 --connections 32
    PYTHONPATH=. .venv/bin/python benchmarks/service.py --rate 1000 --connections 256
    PYTHONPATH=. .venv/bin/python benchmarks/service.py --postgres postgresql://probanon:probanon@127.0.0.1/probanon

Goal (issue 15): >= 1,000 acknowledged submissions/s with p99 < 50 ms and 0 lost on SQLite on
a 2-core machine, for an open survey (no invitations: the submissions alone are timed).

Beside it (issue 40.3, ``--tokens N``, default 2000; 0 skips it), a survey with invitations: N
codes issued, then N blind-token issuances (``POST /api/surveys/{id}/issuance``: the code redeemed
and the blinded token input signed, RSA-2048) timed the same way (issuances/s, p50, p99), then the
N token-carrying submissions (the collector verifies each RSA-PSS signature and spends its nonce in
the row's transaction). The respondents' blinding and unblinding happen between the two phases,
untimed (they run on the respondents' devices).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import hashlib
import json
import multiprocessing
import os
import platform
import random
import secrets
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

ANSWERS = [{"name": "happy", "type": "integer", "min": 0, "max": 10, "label": "How happy are you (0-10)?"},
           {"name": "spending", "type": "number", "min": 0, "max": None, "required": False},
           {"name": "region", "type": "category", "categories": ["north", "south"]}]
START_SECONDS = 60.0


# ---------------------------------------------------------------------------------------
# server and survey

def _request(base: str, method: str, path: str, body=None, token=None, timeout: float = 30.0):
    headers = {"Content-Type": "application/json"} if body is not None else {}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    req = urllib.request.Request(base + path, data=None if body is None else json.dumps(body).encode(),
                                 method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode(errors="replace")


def start_server(database: str, log) -> tuple[subprocess.Popen, str]:
    """``probanon serve`` on 127.0.0.1 and a free port, once it answers."""
    from probanon.service.server import spawn

    try:
        return spawn(database, log, START_SECONDS)
    except RuntimeError as exc:
        sys.exit(f"{exc} (log: {log.name})")


def server_cpu(pid: int) -> float:
    """User + system CPU seconds of a process (Linux /proc), NaN elsewhere."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return float("nan")


def publish(base: str, admin: str, invitations: int = 0) -> tuple[int, str, int]:
    """(survey id, digest, number of cells) of a new survey on a synthetic population: open, or
    taking ``invitations`` (its frame)."""
    import numpy as np
    import pandas as pd

    from probanon.survey.design import design
    from probanon.survey.spec import build_spec

    rng = np.random.default_rng(0)
    size = max(2000, invitations)  # the frame is at most the design's population
    population = pd.DataFrame({"age": rng.integers(18, 90, size).astype(float),
                               "income": np.round(rng.normal(3000, 800, size), 2)})
    spec = json.dumps(build_spec(design(population, 5, 0.8, 0.05)))
    access = {"open": True} if not invitations else {"frame": invitations}
    status, created = _request(base, "POST", "/api/admin/surveys", {
        "title": "Benchmark", "spec": spec, "answers": ANSWERS, "opens": "2020-01-01T00:00:00Z",
        "closes": "2099-01-01T00:00:00Z", **access}, token=admin)
    if status != 201:
        sys.exit(f"publishing the survey failed: {status} {created}")
    return created["id"], created["digest"], _request(base, "GET", f"/api/surveys/{created['id']}")[1]["cells"]


def stored_keys(database: str, survey_id: int) -> list[str]:
    import sqlalchemy as sa

    from probanon.service.db import normalise_url

    engine = sa.create_engine(normalise_url(database))
    try:
        with engine.connect() as conn:
            t = sa.table("submissions", sa.column("survey_id"), sa.column("key_hash"))
            return list(conn.execute(sa.select(t.c.key_hash).where(t.c.survey_id == survey_id)).scalars())
    finally:
        engine.dispose()


# ---------------------------------------------------------------------------------------
# clients (child processes: this module without numpy, pandas or SQLAlchemy, which would lengthen
# the client's garbage collections)

async def _client(url: str, bodies: list[bytes], connections: int, rate: float | None, seed: int,
                  expect: int = 201, keep: bool = False):
    """Closed loop (``rate`` None): ``connections`` workers each send the next submission as soon as
    theirs is answered. Open loop: submissions start at Poisson arrival times of ``rate`` per second
    whether or not earlier ones were answered (at most ``connections`` in flight, the others wait
    for a connection); a latency then counts from the arrival time, waiting included. A request is
    acknowledged when answered ``expect``; ``keep``: the acknowledged answers' bodies are kept."""
    import aiohttp

    latencies, acked, statuses, answers = [], [], {}, {}
    headers = {"Content-Type": "application/json"}

    async def send(session, i, t0):
        try:
            async with session.post(url, data=bodies[i], headers=headers) as resp:
                answer = await resp.read()
                status = resp.status
        except (TimeoutError, aiohttp.ClientError) as exc:
            status = type(exc).__name__
        latencies.append(time.perf_counter() - t0)
        statuses[status] = statuses.get(status, 0) + 1
        if status == expect:
            acked.append(i)
            if keep:
                answers[i] = answer

    async def worker(session, pending):
        for i in pending:
            await send(session, i, time.perf_counter())

    async def arrivals(session):
        rng, tasks, due = random.Random(seed), [], time.perf_counter()
        for i in range(len(bodies)):
            due += rng.expovariate(rate)
            await asyncio.sleep(due - time.perf_counter())
            tasks.append(asyncio.create_task(send(session, i, due)))
        await asyncio.gather(*tasks)

    connector = aiohttp.TCPConnector(limit=connections)
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=60)) as session:
        start = time.perf_counter()
        if rate is None:
            pending = iter(range(len(bodies)))
            await asyncio.gather(*(worker(session, pending) for _ in range(connections)))
        else:
            await arrivals(session)
        end = time.perf_counter()
    return latencies, acked, statuses, start, end, answers


def submission_bodies(digest, n_cells, count, seed, tokens=None) -> tuple[list[str], list[bytes]]:
    """(idempotency keys, bodies) of ``count`` new submissions (with ``tokens``, one each)."""
    rng = random.Random(seed)
    keys = [secrets.token_urlsafe(24) for _ in range(count)]
    bodies = [json.dumps({"digest": digest, "cell": rng.randrange(n_cells), "idempotency_key": key,
                          "answers": {"happy": rng.randrange(11), "spending": round(rng.uniform(0, 5000), 2),
                                      "region": rng.choice(["north", "south"])},
                          **({} if tokens is None else {"token": tokens[i]})}).encode()
              for i, key in enumerate(keys)]
    return keys, bodies


def client_process(url, digest, n_cells, count, connections, rate, seed, barrier, results, prepared=None):
    """Sends ``count`` new submissions (or the ``prepared`` (names, bodies, expected status, keep
    answers)); puts (latencies, acknowledged keys or names, statuses, start, end, CPU s, answers)."""
    if prepared is None:
        keys, bodies = submission_bodies(digest, n_cells, count, seed)
        expect, keep = 201, False
    else:
        keys, bodies, expect, keep = prepared
    try:
        import uvloop
        run = uvloop.run
    except ImportError:
        run = asyncio.run
    gc.collect()
    gc.freeze()  # a full collection of the bodies would stall the client, and be counted as latency
    barrier.wait(60)
    cpu = time.process_time()
    latencies, acked, statuses, start, end, answers = run(_client(url, bodies, connections, rate, seed, expect, keep))
    results.put((latencies, [keys[i] for i in acked], statuses, start, end, time.process_time() - cpu,
                 {keys[i]: a for i, a in answers.items()}))


# ---------------------------------------------------------------------------------------
# one run, the table

def _phase(url, args, count, prepared, proc, digest="", n_cells=0) -> tuple[list, dict]:
    """One timed phase of ``count`` requests from ``args.clients`` processes: (their results, the
    server's CPU cores over the phase). ``prepared``: per client, what :func:`client_process` sends,
    or None for new submissions."""
    ctx = multiprocessing.get_context("spawn")
    barrier, results = ctx.Barrier(args.clients), ctx.Queue()
    shares = [count // args.clients + (i < count % args.clients) for i in range(args.clients)]
    conns = [args.connections // args.clients + (i < args.connections % args.clients) for i in range(args.clients)]
    rate = None if args.rate is None else args.rate / args.clients
    children = [ctx.Process(target=client_process, args=(url, digest, n_cells, shares[i], conns[i], rate, 1000 + i,
                                                          barrier, results, None if prepared is None else prepared[i]))
                for i in range(args.clients)]
    for c in children:
        c.start()
    cpu0 = server_cpu(proc.pid)
    parts = [results.get(timeout=count / 10 + 120) for _ in children]
    cpu1 = server_cpu(proc.pid)
    for c in children:
        c.join(30)
    wall = max(p[4] for p in parts) - min(p[3] for p in parts)
    return parts, (cpu1 - cpu0) / wall


def _summary(parts, server_cores) -> dict:
    import numpy as np

    latencies = np.concatenate([np.asarray(p[0]) for p in parts])
    statuses = {}
    for p in parts:
        for s, n in p[2].items():
            statuses[s] = statuses.get(s, 0) + n
    wall = max(p[4] for p in parts) - min(p[3] for p in parts)
    acked = sum(len(p[1]) for p in parts)
    return {"acked": acked, "wall": wall, "rate": acked / wall,
            "p50": 1000 * float(np.percentile(latencies, 50)), "p99": 1000 * float(np.percentile(latencies, 99)),
            "errors": {s: n for s, n in statuses.items() if s not in (200, 201)},
            "server_cpu": server_cores, "client_cpu": sum(p[5] for p in parts) / wall}


def _stop(proc) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _checked(res: dict, parts, database: str, survey_id: int) -> dict:
    """``res`` with lost, duplicated and unacknowledged rows, read back from the stopped server's database."""
    acked = {hashlib.sha256(k.encode()).hexdigest() for p in parts for k in p[1]}
    stored = stored_keys(database, survey_id)
    return {**res, "lost": len(acked - set(stored)), "duplicates": len(stored) - len(set(stored)),
            "unacknowledged": len(set(stored) - acked)}


def run_once(database: str, args, log) -> dict:
    """The open survey: ``--count`` submissions."""
    from probanon.service.server import init_admin

    admin = init_admin(database)
    proc, base = start_server(database, log)
    try:
        survey_id, digest, n_cells = publish(base, admin)
        parts, cores = _phase(f"{base}/api/surveys/{survey_id}/submissions", args, args.count, None, proc,
                              digest, n_cells)
    finally:
        _stop(proc)
    return _checked(_summary(parts, cores), parts, database, survey_id)


def run_tokens(database: str, args, log) -> tuple[dict, dict]:
    """The survey with invitations: (the issuance phase, the token-carrying submission phase)."""
    from probanon.service import tokens
    from probanon.service.server import init_admin

    n = args.tokens
    admin = init_admin(database)
    proc, base = start_server(database, log)
    try:
        survey_id, digest, n_cells = publish(base, admin, invitations=n)
        status, issued = _request(base, "POST", f"/api/admin/surveys/{survey_id}/tokens", {"count": n}, token=admin,
                                  timeout=300)
        if status != 200:
            sys.exit(f"issuing the invitations failed: {status} {issued}")
        codes = issued["tokens"]
        key = tokens.load_public_form(_request(base, "GET", f"/api/surveys/{survey_id}")[1]["issuer"])
        minted = [tokens.mint(key, digest) for _ in range(n)]  # on the respondents' devices: untimed
        names = [str(i) for i in range(n)]
        requests = [json.dumps({"code": code, "blinded_msg": tokens.b64url(state.blinded_msg)}).encode()
                    for code, (state, _) in zip(codes, minted)]
        split = _split(n, args.clients)
        parts, cores = _phase(f"{base}/api/surveys/{survey_id}/issuance", args, n,
                              [(names[a:b], requests[a:b], 200, True) for a, b in split], proc)
        issuance = _summary(parts, cores)
        answers = {int(i): json.loads(a)["blind_sig"] for p in parts for i, a in p[6].items()}
        bearer = []
        for i in sorted(answers):
            state, nonce = minted[i]
            signature = tokens.finalize(key, state, tokens.unb64url(answers[i], tokens.MODULUS_BYTES))
            bearer.append({"nonce": tokens.b64url(nonce), "signature": tokens.b64url(signature)})
        keys, bodies = submission_bodies(digest, n_cells, len(bearer), 7, bearer)
        split = _split(len(bodies), args.clients)
        parts, cores = _phase(f"{base}/api/surveys/{survey_id}/submissions", args, len(bodies),
                              [(keys[a:b], bodies[a:b], 201, False) for a, b in split], proc)
    finally:
        _stop(proc)
    return issuance, _checked(_summary(parts, cores), parts, database, survey_id)


def _split(n: int, parts: int) -> list[tuple[int, int]]:
    """The index ranges of ``n`` items shared by ``parts`` clients as :func:`_phase` shares them."""
    out, at = [], 0
    for i in range(parts):
        size = n // parts + (i < n % parts)
        out.append((at, at + size))
        at += size
    return out


def _line(what: str, res: dict) -> str:
    checks = (f", lost {res['lost']}, duplicates {res['duplicates']}, unacknowledged rows {res['unacknowledged']}"
              if "lost" in res else "")
    return (f"{what}: {res['acked']} acknowledged in {res['wall']:.2f} s = {res['rate']:,.0f}/s, p50 {res['p50']:.1f} ms, "
            f"p99 {res['p99']:.1f} ms{checks}, errors {res['errors'] or 0}; server {res['server_cpu']:.2f} cores, "
            f"clients {res['client_cpu']:.2f} cores")


def bench(backend: str, args, log) -> dict[str, list[dict]]:
    runs = {"open survey: submissions": []}
    if args.tokens:
        runs.update({"invitations: issuances": [], "invitations: token submissions": []})
    for r in range(args.repeat):
        for kind in ("open", "tokens") if args.tokens else ("open",):
            if backend == "sqlite":
                tmp = tempfile.TemporaryDirectory(prefix="probanon-bench-")
                database, drop = os.path.join(tmp.name, "collector.db"), tmp.cleanup
            else:
                from probanon.service.db import scratch_postgres

                database, drop = scratch_postgres(args.postgres, "probanon_bench_")
            try:
                results = [run_once(database, args, log)] if kind == "open" else list(run_tokens(database, args, log))
            finally:
                drop()
            names = ["open survey: submissions"] if kind == "open" else \
                ["invitations: issuances", "invitations: token submissions"]
            for name, res in zip(names, results):
                runs[name].append(res)
                print(f"  {backend:8s} run {r + 1}, " + _line(name, res), flush=True)
    return runs


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--count", type=int, default=20_000, help="submissions per run (default 20000)")
    p.add_argument("--connections", type=int, default=32, help="concurrent requests in all (default 32)")
    p.add_argument("--clients", type=int, default=1, help="client processes (default 1)")
    p.add_argument("--rate", type=float, default=None, metavar="R",
                   help="open loop: R new submissions per second (Poisson arrivals), at most --connections "
                        "in flight; default: closed loop, --connections clients sending back to back")
    p.add_argument("--repeat", type=int, default=3, help="runs per backend (default 3)")
    p.add_argument("--tokens", type=int, default=2000, metavar="N",
                   help="a survey with invitations: N blind-token issuances, then N token-carrying submissions, "
                        "timed beside the open survey's (default 2000; 0: skip)")
    p.add_argument("--postgres", default=os.environ.get("PROBANON_TEST_POSTGRES"), metavar="URL",
                   help="also on a fresh database beside this one (default: $PROBANON_TEST_POSTGRES)")
    p.add_argument("--log", default=os.path.join(tempfile.gettempdir(), "probanon-bench-server.log"),
                   help="the servers' output")
    args = p.parse_args(argv)
    for name in ("count", "connections", "clients", "repeat"):
        if getattr(args, name) < 1:
            p.error(f"--{name} must be at least 1")
    if args.rate is not None and not args.rate > 0:
        p.error("--rate must be positive")
    if args.tokens < 0:
        p.error("--tokens must be at least 0")
    if args.clients > args.connections:
        p.error("--clients must not exceed --connections")

    backends = ["sqlite"] + (["postgres"] if args.postgres else [])
    print(f"{platform.python_implementation()} {platform.python_version()}, {os.cpu_count()} CPUs; "
          f"{args.count} submissions, {args.connections} connections, {args.clients} client process(es), "
          + (f"open loop at {args.rate:g}/s, " if args.rate else "closed loop, ") + f"{args.repeat} run(s) per backend"
          + (f"; {args.tokens} issuances and token submissions" if args.tokens else ""))
    with open(args.log, "ab") as log:
        table = {b: bench(b, args, log) for b in backends}

    def best_median(values, best):
        return f"{best(values):>9,.1f} {statistics.median(values):>9,.1f}"

    print(f"\n{'backend':10s} {'what':32s} {'acked/s best':>12s} {'median':>9s} {'p50 ms best':>11s} {'median':>9s} "
          f"{'p99 ms best':>11s} {'median':>9s} {'lost':>5s} {'dup':>4s} {'errors':>6s} {'server cores':>12s}")
    for b, kinds in table.items():
        for what, runs in kinds.items():
            lost = f"{sum(r['lost'] for r in runs):>5d} {sum(r['duplicates'] for r in runs):>4d}" if "lost" in runs[0] \
                else f"{'-':>5s} {'-':>4s}"
            print(f"{b:10s} {what:32s} {best_median([r['rate'] for r in runs], max):>22s} "
                  f"{best_median([r['p50'] for r in runs], min):>21s} {best_median([r['p99'] for r in runs], min):>21s} "
                  f"{lost} {sum(sum(r['errors'].values()) for r in runs):>6d} "
                  f"{statistics.median(r['server_cpu'] for r in runs):>12.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
