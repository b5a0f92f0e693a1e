import sys

from sim2real.cli import main

sys.exit(main())
