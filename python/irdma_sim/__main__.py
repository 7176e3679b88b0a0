import sys

from irdma_sim.cli import main

sys.exit(main())
