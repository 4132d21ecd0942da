"""`python -m bootlog.cli`: the console script."""

from bootlog.cli.entry import main

main()
