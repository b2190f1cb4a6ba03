"""``python -m probanon.cli``: the ``probanon`` command."""

import sys

from .main import main

sys.exit(main())
