"""``python -m ragnet``: the same as the ``ragnet`` command."""

from ragnet.cli import main

main()
