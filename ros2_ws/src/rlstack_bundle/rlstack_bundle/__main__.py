"""``python -m rlstack_bundle validate|info ...``: the bundle validator's command line."""

import sys

from rlstack_bundle.bundle import main

sys.exit(main())
