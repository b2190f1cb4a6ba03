"""``probanon workbench [FILE]``: the office's workbench in the browser (:mod:`probanon.workbench`)."""

from __future__ import annotations

import sys

from ..errors import ParameterError
from .options import add_input, example
from .parser import command


def cmd_workbench(args) -> int:
    from ..service import missing_extra

    if missing_extra():
        raise ParameterError(f"the workbench needs the service extra ({missing_extra()} is missing): "
                             "pip install 'probanon[service]'")
    from ..workbench import server

    if args.file is not None and args.demo:
        raise ParameterError("give a FILE or --demo, not both")

    def opened(url: str) -> None:
        if args.no_browser:
            return
        import webbrowser

        try:
            webbrowser.open(url)
        except webbrowser.Error:  # no browser here: the printed address is enough
            pass

    server.serve(host=args.host, port=args.port, file=args.file, demo=args.demo, folder=args.folder, seed=args.seed,
                 max_upload_mb=args.max_upload_mb, certfile=args.certfile, keyfile=args.keyfile,
                 behind_proxy=args.behind_proxy, extra_hosts=args.allowed_host or (),
                 announce=lambda line: print(line, file=sys.stderr, flush=True), opened=opened)
    return 0


def add_parser(sub) -> None:
    from ..workbench import MAX_UPLOAD_MB  # the package alone: no server imported to build the parser

    w = command(sub, "workbench", epilog=example(
        "probanon workbench census.csv            # opens the browser on http://127.0.0.1:PORT/?token=...",
        "probanon workbench --demo --no-browser   # the built-in census; open the printed address yourself"))
    add_input(w, "file", nargs="?", default=None, help="a file to open at once (CSV, .csv.gz, Parquet, SPSS, Stata)")
    w.add_argument("--demo", action="store_true", help="open the built-in census data (probanon datasets)")
    w.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default 127.0.0.1: this machine only; another needs TLS or "
                        "--behind-proxy)")
    w.add_argument("--port", type=int, default=0, help="port (default: a free one)")
    w.add_argument("--no-browser", action="store_true", help="print the address, do not open a browser")
    w.add_argument("--folder", default=None,
                   help="the session's working folder (strategies, uploads; default a private temporary folder)")
    w.add_argument("--seed", type=int, default=None, help="the seed the strategies start from (default: drawn, shown)")
    w.add_argument("--max-upload-mb", type=float, default=MAX_UPLOAD_MB,
                   help=f"largest upload in MiB (default {MAX_UPLOAD_MB}); larger files open by path")
    w.add_argument("--certfile", default=None, help="TLS certificate (PEM) to serve https")
    w.add_argument("--keyfile", default=None, help="TLS private key (PEM)")
    w.add_argument("--behind-proxy", action="store_true",
                   help="listen beyond loopback without TLS because the reverse proxy of docs/workbench.md "
                        "terminates it")
    w.add_argument("--allowed-host", action="append", metavar="NAME",
                   help="a further Host name to answer for (the proxy's public name); repeatable")
    w.set_defaults(func=cmd_workbench)
