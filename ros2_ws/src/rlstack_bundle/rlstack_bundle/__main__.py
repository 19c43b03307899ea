"""``python -m rlstack_bundle validate|info ...``: the bundle validator's command line."""

import sys

from rlstack_bundle.bundle import main

if __name__ == "__main__":
    sys.exit(main())
