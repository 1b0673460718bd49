"""`python -m solver` is the `fleetplan` command."""

import sys

from solver.cli import main

sys.exit(main())
