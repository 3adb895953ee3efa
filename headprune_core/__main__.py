"""``python -m headprune_core``: see :mod:`headprune_core.cli.main`."""

import sys

from headprune_core.cli.main import main

sys.exit(main())
