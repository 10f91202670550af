import gc

gc.disable()  # the imports make thousands of objects and no garbage; cli re-enables it

from .cli.main import finish, main  # noqa: E402

finish(main())
