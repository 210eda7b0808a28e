"""`python -m activerag.cli`: the `activerag` command."""

import sys

from activerag.cli import main

sys.exit(main())
