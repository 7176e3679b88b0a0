import os
import sys

from irdma_sim.cli import main

try:
    status = main()
    sys.stdout.flush()
except BrokenPipeError:
    # The reader went away (`irdma-sim diff A B | head`): not an error of the command's.
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    status = 0
sys.exit(status)
