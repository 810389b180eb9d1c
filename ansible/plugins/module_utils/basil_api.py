# -*- coding: utf-8 -*-
# Copyright: Basil contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one way the collection's modules talk to Basil's REST API: the shared connection options,
authentication (an API token or a vCenter session), TLS verified by default, and Basil's errors
turned into failures that name the field and carry Basil's own message."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import time

from ansible.module_utils.basic import env_fallback
from ansible.module_utils.six.moves.urllib.parse import quote, urlencode
from ansible.module_utils.urls import fetch_url

API_PREFIX = "/api/v1"
FINISHED_PLAN_STATES = ("succeeded", "failed", "cancelled")


def connection_argument_spec():
    """The options every Basil module takes (see the ``basil.vsphere.connection`` doc fragment)."""
    return dict(
        basil_url=dict(type="str", required=True, fallback=(env_fallback, ["BASIL_URL"])),
        basil_token=dict(type="str", no_log=True, fallback=(env_fallback, ["BASIL_TOKEN"])),
        vc_session=dict(type="str", no_log=True, fallback=(env_fallback, ["BASIL_VC_SESSION"])),
        vc_server=dict(type="str", fallback=(env_fallback, ["BASIL_VC_SERVER"])),
        validate_certs=dict(type="bool", default=True),
        ca_path=dict(type="path", fallback=(env_fallback, ["BASIL_CA_PATH"])),
        request_timeout=dict(type="int", default=60),
    )


CONNECTION_MUTUALLY_EXCLUSIVE = [("basil_token", "vc_session")]
CONNECTION_REQUIRED_ONE_OF = [("basil_token", "vc_session")]
CONNECTION_REQUIRED_TOGETHER = [("vc_session", "vc_server")]


def module_kwargs(argument_spec, **extra):
    """``AnsibleModule`` keyword arguments: the module's own options plus the connection's."""
    spec = connection_argument_spec()
    spec.update(argument_spec)
    kwargs = dict(
        argument_spec=spec,
        mutually_exclusive=list(CONNECTION_MUTUALLY_EXCLUSIVE) + list(extra.pop("mutually_exclusive", [])),
        required_one_of=list(CONNECTION_REQUIRED_ONE_OF) + list(extra.pop("required_one_of", [])),
        required_together=list(CONNECTION_REQUIRED_TOGETHER) + list(extra.pop("required_together", [])),
    )
    kwargs.update(extra)
    return kwargs


def path_segment(value):
    """One path segment, percent-encoded (pod and pool names may hold any character)."""
    return quote(str(value), safe="")


class BasilError(Exception):
    """Basil answered with an error (or could not be reached): status, code, message, problems."""

    def __init__(self, method, path, status, message, code=None, problems=None, body=None):
        self.method = method
        self.path = path
        self.status = status
        self.message = message
        self.code = code
        self.problems = problems or []
        self.body = body
        super(BasilError, self).__init__(self.describe())

    def describe(self):
        text = "%s %s: " % (self.method, self.path)
        if self.status and self.status > 0:
            text += "HTTP %s" % self.status
            if self.code:
                text += " (%s)" % self.code
            text += ": "
        text += "Basil says: %s" % self.message if self.status and self.status > 0 else self.message
        if self.problems:
            text += "; " + "; ".join(
                "%s: %s" % (p.get("field", "?"), p.get("message", "")) for p in self.problems
            )
        return text

    def result(self):
        """What a failing module returns beside ``msg``."""
        out = dict(status=self.status, problems=self.problems)
        if self.code:
            out["error"] = self.code
        return out


class BasilClient:
    """Basil's REST API through ``ansible.module_utils.urls.fetch_url`` (the module's
    ``validate_certs`` and ``ca_path`` apply, so TLS is verified unless a play says otherwise)."""

    def __init__(self, module):
        self.module = module
        params = module.params
        self.base = params["basil_url"].rstrip("/")
        if not self.base.lower().startswith(("https://", "http://")):
            module.fail_json(msg="basil_url: must start with https:// (got %r)" % params["basil_url"])
        self.headers = {"Accept": "application/json"}
        if params.get("basil_token"):
            self.headers["Authorization"] = "Bearer %s" % params["basil_token"]
        elif params.get("vc_session"):
            self.headers["X-Basil-VC-Session"] = params["vc_session"]
            self.headers["X-Basil-VC-Server"] = params["vc_server"]
        self.timeout = params.get("request_timeout") or 60

    def url(self, path, query=None):
        url = self.base + API_PREFIX + path
        if query:
            url += "?" + urlencode(dict((k, v) for k, v in query.items() if v is not None))
        return url

    def request(self, method, path, body=None, query=None, expect=(200,)):
        """The decoded JSON answer (None for an empty one) and the response headers; raises
        :class:`BasilError` for any status not in *expect*."""
        headers = dict(self.headers)
        data = None
        if body is not None:
            data = json.dumps(body)
            headers["Content-Type"] = "application/json"
        resp, info = fetch_url(
            self.module, self.url(path, query), data=data, headers=headers, method=method,
            timeout=self.timeout, ca_path=self.module.params.get("ca_path"),
        )
        status = info.get("status", -1)
        if "body" in info or resp is None:
            raw = info.get("body")  # an HTTP error: fetch_url read and closed the answer
        else:
            try:
                raw = resp.read()
            finally:
                resp.close()
        if isinstance(raw, bytes):
            raw = raw.decode("utf-8", "replace")
        payload = None
        if raw:
            try:
                payload = json.loads(raw)
            except ValueError:
                payload = None
        if status in expect:
            return payload, dict((k.lower(), v) for k, v in info.items() if isinstance(k, str))
        if isinstance(payload, dict) and "message" in payload:
            raise BasilError(
                method, path, status, payload.get("message"), payload.get("error"),
                payload.get("problems"), payload,
            )
        message = info.get("msg") or (raw[:300] if raw else "no answer")
        raise BasilError(method, path, status, message)

    def get(self, path, query=None, expect=(200,)):
        return self.request("GET", path, query=query, expect=expect)[0]

    def post(self, path, body=None, expect=(200, 201)):
        return self.request("POST", path, body=body, expect=expect)[0]

    def put(self, path, body=None, expect=(200,)):
        return self.request("PUT", path, body=body, expect=expect)[0]

    def delete(self, path, query=None, expect=(200, 204)):
        return self.request("DELETE", path, query=query, expect=expect)[0]

    def get_or_none(self, path, query=None):
        """GET, or None when Basil answers 404."""
        payload, headers = self.request("GET", path, query=query, expect=(200, 404))
        if headers.get("status") == 404:
            return None
        return payload

    def fail(self, err, **result):
        """Fail the module with Basil's error, naming the request and every problem's field."""
        out = err.result()
        out.update(result)
        self.module.fail_json(msg=err.describe(), **out)

    def wait_for(self, what, probe, timeout_s, interval_s):
        """Call *probe* until it returns something other than None; fail after *timeout_s*."""
        deadline = time.time() + timeout_s
        while True:
            value = probe()
            if value is not None:
                return value
            if time.time() >= deadline:
                self.module.fail_json(msg="timed out after %ss waiting for %s" % (timeout_s, what))
            time.sleep(interval_s)

    def run_job(self, job, wait=True, timeout_s=600, interval_s=2):
        """Run *job* now (202 + Location) and, with *wait*, follow the run until it ended."""
        run, headers = self.request("POST", "/jobs/%s/run" % path_segment(job), expect=(202,))
        if not wait:
            return run
        location = headers.get("location") or (API_PREFIX + "/jobs/%s/runs/%s" % (path_segment(job), run["id"]))
        path = location.split(API_PREFIX, 1)[1] if API_PREFIX in location else location

        def ended():
            current = self.get(path)
            return current if current.get("outcome") != "running" else None

        return self.wait_for("job %s run %s" % (job, run.get("id")), ended, timeout_s, interval_s)


def without_none(mapping):
    """The mapping without the keys whose value is None (options the play left out)."""
    return dict((k, v) for k, v in mapping.items() if v is not None)


def summarize_moves(moves):
    """Each move's outcome in the shape the modules return."""
    keys = ("id", "disk", "vm", "from", "to", "size_gb", "state", "progress", "message", "reason")
    return [dict((k, m.get(k)) for k in keys if k in m) for m in moves or []]
