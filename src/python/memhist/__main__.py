"""memhist.__main__ - `python -m memhist ARGS` and the `memhist` console
script of the pip package: both run the memhist command-line tool of the
installation this package belongs to, with the same arguments."""
import os
import sys

from . import _native


def main():
    path = _native.tool()
    if path is None:
        sys.stderr.write("memhist: the memhist command-line tool is not installed next to the "
                         "Python package (%s)\n" % os.path.dirname(os.path.abspath(__file__)))
        return 1
    sys.stdout.flush()
    os.environ.setdefault("MEMHIST_PYTHON", sys.executable)  # `memhist export` runs this Python
    os.execv(path, [path] + sys.argv[1:])
    return 1


if __name__ == "__main__":
    sys.exit(main())
