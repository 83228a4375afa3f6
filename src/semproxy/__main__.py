import sys

from semproxy.cli import main

sys.exit(main())
