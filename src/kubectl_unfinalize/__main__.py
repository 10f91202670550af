import gc

gc.disable()  # the imports make thousands of objects and no garbage; cli re-enables it

from .cli.main import main  # noqa: E402
from .cli.process import exit_now  # noqa: E402

exit_now(main())
