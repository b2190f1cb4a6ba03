"""``probanon serve``: the collector service (needs the ``service`` extra)."""

from __future__ import annotations

from ..errors import ParameterError


def _port(text: str) -> int:
    import argparse

    if not text.isdigit() or not 0 <= int(text) <= 65535:
        raise argparse.ArgumentTypeError(f"a port is 0..65535, got {text!r}")
    return int(text)


def cmd_serve(args) -> int:
    try:
        import fastapi, sqlalchemy, uvicorn  # noqa: E401, F401
    except ImportError as exc:
        raise ParameterError(f"the collector needs the service extra ({exc.name} is missing): "
                             "pip install 'probanon[service]'") from None
    from . import server

    if args.init_admin:
        token = server.init_admin(args.database)
        print(token)
        print("this admin token is shown once and stored hashed; every earlier admin token is revoked")
        return 0
    server.serve(args.database, host=args.host, port=args.port)
    return 0


def add_parser(sub) -> None:
    s = sub.add_parser("serve", help="the survey collector service (HTTP API, respondent page)")
    s.add_argument("--database", required=True, metavar="URL",
                   help="a SQLite file path (created if absent) or postgresql://user:password@host/db")
    s.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1; put a TLS "
                                                         "reverse proxy in front for anything else)")
    s.add_argument("--port", type=_port, default=8000)
    s.add_argument("--init-admin", action="store_true",
                   help="print a new admin token (shown once; earlier admin tokens are revoked) and exit")
    s.set_defaults(func=cmd_serve)
