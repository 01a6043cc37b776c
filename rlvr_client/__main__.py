"""``python -m rlvr_client COMMAND``: the client commands without the server's packages (rlvr_client/cli.py)."""

import sys

from rlvr_client.cli import main

sys.exit(main())
