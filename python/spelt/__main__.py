"""``python -m spelt``: the command line (see spelt.cli)."""

import sys

from spelt.cli import main

sys.exit(main())
