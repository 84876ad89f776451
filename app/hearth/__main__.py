"""Entry point: dispatch on argv before anything imports Qt.

``hearth`` opens the GUI; ``hearth --worker`` is the engine process the GUI starts by
re-running this same program (packaged apps have no separate python); every other
first word is a CLI verb.
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] == "--quantize":  # the quantizer's own process (library/quantize_job)
        from hearth.engine.quantize import main as quantize_main

        return quantize_main(args[1:])
    if args and args[0] == "--backend-info":  # the GUI's probe (supervisor/backend_probe)
        from hearth.engine.backend import describe_json

        sys.stdout.write(describe_json() + "\n")
        return 0
    if args and args[0] == "--read-document":  # a chat's attachment (chats/doc_job)
        from hearth.chats.doc_job import child_main

        return child_main(args[1:])
    if args and args[0] == "--worker":
        from hearth.cli.serve import worker_main

        return worker_main(args[1:])
    if len(args) == 1 and args[0].lower().endswith(".gguf"):  # "Open with Hearth"
        from hearth.ui.app import run_gui

        return run_gui([sys.argv[0], args[0]])
    if args:
        from hearth.cli import main as cli_main

        return cli_main(args, open_gui=_open_gui)
    return _open_gui(sys.argv[:1])


def _open_gui(argv: list[str]) -> int:
    """The GUI, imported only now: the CLI and the worker never load Qt."""
    from hearth.ui.app import run_gui

    return run_gui(argv)


if __name__ == "__main__":
    sys.exit(main())
