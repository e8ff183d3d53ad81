"""``python -m attnverify``: the same command line as the ``attnverify`` script."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
