"""``python -m headprune_core``: see :mod:`headprune_core.cli`."""

import sys

from headprune_core.cli import main

sys.exit(main())
