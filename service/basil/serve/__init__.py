"""``basil serve``: the API's HTTP front end (asyncio, HTTPS) and the service's one scheduler in one process.

Modules: ``server`` (start order, graceful stop), ``tls`` (the self-signed certificate and its
thumbprints), ``lock`` (one serving process per store).
"""

from basil.serve.server import READY_LINE, BasilServer, run

__all__ = ["READY_LINE", "BasilServer", "run"]
