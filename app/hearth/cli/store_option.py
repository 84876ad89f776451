"""The ``--store`` option shared by the verbs that write secrets (login, keys create)."""

from __future__ import annotations

import argparse

STORE_HELP = (
    "where to keep it: 'keyring' (the OS keyring, the default) or 'file' (plain text in "
    "secrets.json, mode 600, for machines with no keyring); the choice is remembered"
)


def add_store_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--store", choices=["keyring", "file"], default=None, help=STORE_HELP)


def remember_if_chosen(args: argparse.Namespace) -> None:
    """A ``--store`` given on a write becomes the setting, so later reads look there."""
    from hearth.config.secrets import StoreChoice, remember_choice

    if args.store is not None:
        remember_choice(StoreChoice(args.store))
