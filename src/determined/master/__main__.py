import sys

from determined.master.api._serve import main

sys.exit(main())
