# -*- coding: utf-8 -*-
# Copyright: Basil contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A small stand-in of Basil's REST API on a loopback HTTP port, for the modules' unit tests: it keeps
plans, pools and the rebalance window in memory and answers the way Basil's OpenAPI document says
(the integration tests run the modules against the real ``basil serve``)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class FakeBasil:
    def __init__(self):
        self.requests = []
        self.plans = {}
        self.pools = {}
        self.recommendation = dict(
            id="rec-1", pod="gold", moves=[dict(disk="vm-1:scsi0:1", to="ds-2", size_gb=10.0)],
            before=dict(imbalance=0.9), after=dict(imbalance=0.1),
        )
        self.stale = False
        self.window = dict(cron="0 1 * * *", timezone="UTC", duration="180m", duration_s=10800,
                           max_moves=8, max_gb=2000.0, enabled=True, changed=None)
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self):
        return "http://127.0.0.1:%d" % self.server.server_address[1]

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()

    def writes(self):
        return [(r[0], r[1]) for r in self.requests if r[0] != "GET" and not r[1].endswith("/validate")]

    def answer(self, method, path, body):  # pylint: disable=too-many-return-statements,too-many-branches
        path = path.split("?", 1)[0]
        if path == "/api/v1/pods/gold/recommendations":
            return (200, self.recommendation) if method == "GET" else (201, self.recommendation)
        if path == "/api/v1/plans" and method == "GET":
            return 200, sorted(self.plans.values(), key=lambda p: -p["id"])
        if path == "/api/v1/plans" and method == "POST":
            if self.stale:
                return 409, dict(error="conflict", message="recommendation rec-1 is stale: the pod changed since")
            if body.get("recommendation_id") != "rec-1":
                return 404, dict(error="not_found", message="no recommendation %r" % body.get("recommendation_id"))
            plan = dict(id=len(self.plans) + 1, state="proposed", recommendation_id="rec-1",
                        moves=[dict(id=1, disk="vm-1:scsi0:1", to="ds-2", state="pending")])
            self.plans[plan["id"]] = plan
            return 201, plan
        if path.startswith("/api/v1/plans/"):
            parts = path.split("/")
            plan = self.plans.get(int(parts[4]))
            if plan is None:
                return 404, dict(error="not_found", message="no plan %s" % parts[4])
            if method == "GET":
                return 200, plan
            action = parts[5]
            if action == "approve":
                plan["state"] = "approved"
            elif action == "apply":
                plan["state"] = "succeeded"
                for move in plan["moves"]:
                    move["state"] = "succeeded"
            elif action == "cancel":
                plan["state"] = "cancelled"
            return 200, plan
        if path == "/api/v1/pools/validate":
            problems = [dict(field="pools[%d].vm" % i, message="no VM %r" % n["vm"])
                        for i, n in enumerate(body.get("pools") or []) if n.get("vm", "").startswith("ghost")]
            return 200, dict(valid=not problems, problems=problems)
        if path == "/api/v1/pools" and method == "POST":
            stored = dict(body, version=1, vcenter="lab")
            self.pools[body["name"]] = stored
            return 201, stored
        if path.startswith("/api/v1/pools/"):
            name = path.rsplit("/", 1)[1]
            current = self.pools.get(name)
            if current is None:
                return 404, dict(error="not_found", message="no pool tree %r" % name)
            if method == "GET":
                return 200, current
            if method == "PUT":
                if body["version"] != current["version"]:
                    return 409, dict(error="conflict", message="version %s is not the current one" % body["version"])
                stored = dict(body, version=current["version"] + 1, vcenter="lab")
                self.pools[name] = stored
                return 200, stored
            del self.pools[name]
            return 204, None
        if path == "/api/v1/schedules":
            return 200, dict(rebalance=self.window)
        if path == "/api/v1/schedules/rebalance":
            if method == "PUT":
                self.window.update(body)
                self.window["changed"] = dict(fields=body, at="now", by="test")
            else:
                self.window["changed"] = None
            return 200, dict(rebalance=self.window)
        return 404, dict(error="not_found", message="no route %s %s" % (method, path))

    def _handler(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def _serve(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length)) if length else None
                fake.requests.append((self.command, self.path, dict(self.headers)))
                if self.headers.get("Authorization") != "Bearer good-token":
                    status, payload = 401, dict(error="unauthorized", message="a valid API token is needed")
                else:
                    status, payload = fake.answer(self.command, self.path, body)
                data = b"" if payload is None else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_DELETE = _serve

            def log_message(self, format, *args):  # pylint: disable=redefined-builtin
                pass

        return Handler
