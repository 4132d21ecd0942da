"""The one native part of bootlog, optional: pyproject.toml holds everything else.

bootlog/_linecut.c speeds up the reader's line cut of a plain log (scan._np_lines does the same
with numpy, and scan.py falls back to it): where no C compiler is, `pip install .` warns and
installs bootlog without it.
"""
from setuptools import Extension, setup

setup(ext_modules=[Extension("bootlog._linecut", ["bootlog/_linecut.c"], optional=True)])
