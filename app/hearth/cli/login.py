"""``hearth login`` / ``hearth logout``: the Hugging Face token for gated models.

The token goes to the configured secret store (:mod:`hearth.config.secrets`), and the
command says where it really went: the OS keyring by backend name, or the plain-text
file by path. With no OS keyring it fails and names ``--store file``.
"""

from __future__ import annotations

import argparse
import getpass

from hearth.cli.console import err, out
from hearth.cli.store_option import add_store_option, remember_if_chosen


def add_parser(verbs: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    login = verbs.add_parser(
        "login", help="store a Hugging Face token (OS keyring, or a file with --store file)"
    )
    login.add_argument("--token", default=None, help="the token (prompted for if omitted)")
    add_store_option(login)
    login.set_defaults(handler=run_login)
    logout = verbs.add_parser("logout", help="forget the stored Hugging Face token")
    logout.set_defaults(handler=run_logout)


def run_login(args: argparse.Namespace) -> int:
    from hearth.config.secrets import SecretStoreError, open_store, set_hf_token

    token = args.token or getpass.getpass("Hugging Face token (input hidden): ")
    if not token.strip():
        err("No token given.")
        return 2
    try:
        where = set_hf_token(token.strip(), open_store(args.store))
        remember_if_chosen(args)
    except SecretStoreError as exc:
        err(exc.message)
        return 1
    except ValueError as exc:  # a malformed token: spaces, control characters
        err(str(exc))
        return 2
    out(where.saved_message("Token"))
    return 0


def run_logout(_args: argparse.Namespace) -> int:
    from hearth.config.secrets import SecretStoreError, delete_hf_token, open_store

    try:
        store = open_store()
        removed = delete_hf_token(store)
    except SecretStoreError as exc:
        err(exc.message)
        return 1
    where = store.location().describe()
    out(f"Token removed from {where}." if removed else f"No token was stored in {where}.")
    return 0
