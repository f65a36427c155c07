import sys

from mnemetric.cli import main

sys.exit(main())
