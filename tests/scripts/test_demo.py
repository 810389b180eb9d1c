"""scripts/demo.py's port check: a quick restart keeps the port (TIME_WAIT is not "busy"), a listener is."""

from __future__ import annotations

import importlib.util
import socket
import sys
from types import ModuleType

from tests.vcenter.labproc import ROOT


def load_demo() -> ModuleType:
    spec = importlib.util.spec_from_file_location("basil_demo_script", ROOT / "scripts" / "demo.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_a_port_left_in_time_wait_is_taken_again() -> None:
    demo = load_demo()
    with socket.socket() as listener:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        client = socket.create_connection(("127.0.0.1", port))
        served, _ = listener.accept()
        served.close()  # the server closes first: its end of the connection waits in TIME_WAIT
        client.recv(1)
        client.close()
    with socket.socket() as plain:  # what the old check did: refused while TIME_WAIT lasts
        try:
            plain.bind(("127.0.0.1", port))
            refused_without_reuse = False
        except OSError:
            refused_without_reuse = True
    assert refused_without_reuse, "no TIME_WAIT was left behind: the test proves nothing"
    assert demo.free_port(port) == port


def test_a_listening_port_is_busy() -> None:
    demo = load_demo()
    with socket.socket() as listener:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        other = demo.free_port(port)
    assert other != port
    assert other > 0
