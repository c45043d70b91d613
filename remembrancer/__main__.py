"""`python -m remembrancer …` is the `remembrancer` command."""

import sys

from remembrancer.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
