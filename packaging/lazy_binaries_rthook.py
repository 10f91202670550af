# Runtime hook of the one-file binary (Linux): the extension modules and files that only the
# kubernetes client's path needs (exec credential plugins, auth providers, in-cluster config)
# are not unpacked on every run. The one-file bootloader writes every library it carries
# into a fresh temporary directory before each start and removes it at exit; those modules
# were most of its files and bytes. The spec packs them into lazy-binaries.zip (one
# deflated file) and fills in LAZY below; the first import of one of them unpacks the zip
# next to the rest, once, and loads the module from there.
# ruff: noqa: ANN001, ANN202, ANN206 - a PyInstaller runtime hook, run before the app


def _install(lazy):
    import _thread
    import os
    import sys

    root = sys._MEIPASS
    archive = os.path.join(root, "lazy-binaries.zip")
    lock = _thread.allocate_lock()
    state = {"unpacked": False}

    def unpack():
        with lock:
            if not state["unpacked"]:
                import zipfile

                with zipfile.ZipFile(archive) as bundle:
                    bundle.extractall(root)
                state["unpacked"] = True

    class LazyBinaries:
        """Meta path finder: unpacks the zip on the first import that needs it. A module name
        mapped to a file is loaded from it; one mapped to None (a pure module whose data
        files are in the zip) is left to the finders after this one."""

        @staticmethod
        def find_spec(name, path=None, target=None):
            if name not in lazy:
                return None
            unpack()
            member = lazy[name]
            if member is None:
                return None
            from importlib.util import spec_from_file_location

            return spec_from_file_location(name, os.path.join(root, member))

        @staticmethod
        def invalidate_caches():
            pass

    if os.path.exists(archive):
        sys.meta_path.insert(0, LazyBinaries)


LAZY = {}  # module name -> file in lazy-binaries.zip, or None; filled in by the spec
_install(LAZY)
del _install
