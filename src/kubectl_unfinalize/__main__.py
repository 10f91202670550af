import gc
import sys

gc.disable()  # the imports make thousands of objects and no garbage; cli re-enables it

from .cli.main import main  # noqa: E402

sys.exit(main())
