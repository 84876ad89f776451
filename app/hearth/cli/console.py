"""Where CLI verbs write: results to stdout (for pipes), messages to stderr.

Package code does not ``print``; verbs write through these two so that a script can
capture the result of ``hearth ls --json`` while warnings still reach the terminal.
"""

from __future__ import annotations

import sys


def out(text: str) -> None:
    """A line of the verb's result (stdout)."""
    sys.stdout.write(text + "\n")


def err(text: str) -> None:
    """A line for the person at the terminal: errors, notes, hints (stderr)."""
    sys.stderr.write(text + "\n")
