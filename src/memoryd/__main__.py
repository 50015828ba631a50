"""`python -m memoryd`: the same as the `memoryd` command."""

import sys

from memoryd.cli import main

sys.exit(main())
