"""The test helper that runs ``hearth serve``: the port it reports is the one it passed."""

from __future__ import annotations

from pathlib import Path

import pytest

from server_process import ServeProcess, free_port, start_serve


def _argv(served: ServeProcess) -> list[str]:
    argv = served.process.args
    assert isinstance(argv, list)
    return [str(arg) for arg in argv]


def _ports(served: ServeProcess) -> list[str]:
    argv = _argv(served)
    return [argv[i + 1] for i, arg in enumerate(argv) if arg == "--port"]


@pytest.mark.parametrize("joined", [False, True])
def test_a_port_given_in_the_flags_is_the_one_passed_and_reported(
    tmp_path: Path, joined: bool
) -> None:
    port = free_port()
    flags = [f"--port={port}"] if joined else ["--port", str(port)]
    served = start_serve(None, tmp_path, *flags, "--ttl", "5", wait=False)
    try:
        assert served.port == port and served.base_url.endswith(f":{port}")
        assert _ports(served) == [str(port)]  # passed once, not overridden
        assert "--ttl" in _argv(served)  # the other flags are kept
    finally:
        served.stop()


def test_without_a_port_flag_a_free_port_is_chosen_and_reported(tmp_path: Path) -> None:
    served = start_serve(None, tmp_path, wait=False)
    try:
        assert _ports(served) == [str(served.port)]
    finally:
        served.stop()
