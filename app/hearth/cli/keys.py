"""``hearth keys``: create, list and revoke the endpoint's API keys."""

from __future__ import annotations

import argparse
import datetime
import sys

from hearth.cli.store_option import add_store_option, remember_if_chosen


def add_parser(verbs: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    keys = verbs.add_parser("keys", help="create, list and revoke API keys for the endpoint")
    actions = keys.add_subparsers(dest="keys_action", metavar="ACTION", required=True)
    create = actions.add_parser("create", help="make a new key and print it once")
    create.add_argument("name", help="what the key is for, e.g. 'laptop-continue'")
    add_store_option(create)
    actions.add_parser("list", help="list keys (masked)")
    revoke = actions.add_parser("revoke", help="revoke a key by name")
    revoke.add_argument("name", nargs="?")
    revoke.add_argument("--all", action="store_true", help="revoke every key")
    keys.set_defaults(handler=run)


# server/key_refresh.py re-reads the store every few seconds
_APPLIES = "Running servers stop accepting it within a few seconds."


def run(args: argparse.Namespace) -> int:
    from hearth.config.api_keys import create_key, list_keys, revoke_all, revoke_key
    from hearth.config.secrets import SecretStoreError, open_store

    try:
        if args.keys_action == "create":
            store = open_store(args.store)
            key = create_key(args.name, store)
            remember_if_chosen(args)
            sys.stdout.write(f"{key.key}\n")
            saved = store.location().saved_message(f"API key '{key.name}'")
            sys.stderr.write(f"{saved} Copy it now: it is not shown again.\n")
        elif args.keys_action == "list":
            for entry in list_keys():  # from the index: no keyring needed
                when = datetime.datetime.fromtimestamp(entry.created).strftime("%Y-%m-%d %H:%M")
                sys.stdout.write(f"{entry.name:<24} {entry.masked:<16} created {when}\n")
        elif args.all:
            sys.stdout.write(f"Revoked {revoke_all()} key(s). {_APPLIES}\n")
        elif args.name and revoke_key(args.name):
            sys.stdout.write(f"Revoked '{args.name}'. {_APPLIES}\n")
        else:
            sys.stderr.write("No such key (see 'hearth keys list').\n")
            return 1
    except SecretStoreError as exc:
        sys.stderr.write(exc.message + "\n")
        return 1
    return 0
