"""The one native part of bootlog, optional: pyproject.toml holds everything else.

bootlog/_linecut.c runs the reader's and the parser's hot loops in native code (the line cut of
a block, a podman -t block's line table, runs of stats lines); scan.py and parse.py do the same
in Python where it is missing.  Where no C compiler is, `pip install .` installs bootlog without
it (`pip install -v .` shows the compiler's error).
"""
from setuptools import Extension, setup

setup(ext_modules=[Extension("bootlog._linecut", ["bootlog/_linecut.c"], optional=True)])
