"""The command line, the top floor of probanon (issue 41): the only package that imports argparse,
reads parsed arguments or prints. :mod:`.main` holds the parser and :func:`main`; each command
family has its module (``microagg``, ``apply``, ``report``, ``demo``, ``recipe``, ``survey``,
``swapping``, ``diversity``, ``setvalued``, ``attacks``, ``collector``, ``reproduce``,
``datasets``), imported when its command runs; :mod:`.options` declares the options they share.
The library never imports this package."""

from .main import build_parser, main

__all__ = ["build_parser", "main"]
