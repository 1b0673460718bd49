"""`python -m solver` is the `fleetplan` command."""

import sys

from solver.cli.main import main

sys.exit(main())
