import gc

gc.disable()  # before the package's own imports too; cli.main.console keeps it off until the run

from .cli.main import console  # noqa: E402

console()
