"""Entry point for ``python -m stoker.cli``."""

import sys

from stoker.cli import main

sys.exit(main())
