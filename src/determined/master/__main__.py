import sys

from determined.master._prestart import prestart_trial_zygote

prestart_trial_zygote(sys.argv[1:])  # its imports overlap the master's own

from determined._procs._spawner import discard_prestarted_zygote  # noqa: E402
from determined.master.api._serve import main  # noqa: E402

try:
    code = main()
finally:
    discard_prestarted_zygote()  # a master that stopped before its agent started
sys.exit(code)
