"""``hearth paths``: where Hearth keeps its data, settings, logs and models.

The answer to "where did my models go / where is the log?" without opening the GUI,
for support requests and scripts (``--json``). The same list as Settings' Folders box.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys

log = logging.getLogger(__name__)


def add_parser(verbs: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    paths = verbs.add_parser(
        "paths",
        help="show where data, settings, logs and models live",
        description="Print Hearth's data, settings, logs and models folders "
        "(platformdirs, or HEARTH_DATA_DIR / HEARTH_CONFIG_DIR when set).",
    )
    paths.add_argument("--json", action="store_true", help="machine-readable output")
    paths.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from hearth.config.folders import user_folders

    folders = user_folders()
    if args.json:
        sys.stdout.write(json.dumps({f.key: str(f.path) for f in folders}, indent=2) + "\n")
        return 0
    width = max(len(f.key) for f in folders)
    for folder in folders:
        sys.stdout.write(f"{folder.key:<{width}}  {folder.path}\n")
    return 0
