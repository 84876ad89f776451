"""``hearth login`` / ``hearth logout``: the Hugging Face token for gated models."""

from __future__ import annotations

import argparse
import getpass

from hearth.cli.console import err, out


def add_parser(verbs: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    login = verbs.add_parser("login", help="store a Hugging Face token in the OS keyring")
    login.add_argument("--token", default=None, help="the token (prompted for if omitted)")
    login.set_defaults(handler=run_login)
    logout = verbs.add_parser("logout", help="forget the stored Hugging Face token")
    logout.set_defaults(handler=run_logout)


def run_login(args: argparse.Namespace) -> int:
    from hearth.config.secrets import SecretStoreError, set_hf_token

    token = args.token or getpass.getpass("Hugging Face token (input hidden): ")
    if not token.strip():
        err("No token given.")
        return 2
    try:
        set_hf_token(token.strip())
    except SecretStoreError as exc:
        err(str(exc))
        return 1
    out("Token saved in the OS keyring.")
    return 0


def run_logout(_args: argparse.Namespace) -> int:
    from hearth.config.secrets import SecretStoreError, delete_hf_token

    try:
        delete_hf_token()
    except SecretStoreError as exc:
        err(str(exc))
        return 1
    out("Token removed.")
    return 0
