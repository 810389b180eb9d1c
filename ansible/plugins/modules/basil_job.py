#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: Basil contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: basil_job
short_description: Run one of Basil's scheduled jobs now and wait for its outcome
version_added: "0.1.0"
description:
  - Hands a job (collect, model, recommend, srp, maintenance, ... see GET /api/v1/jobs) to Basil's
    scheduler at once and, with O(wait=true), follows the run until it succeeded, failed or was skipped.
  - Running a job is an action, so the module reports C(changed=true) whenever it starts one.
  - A job already running is not started twice; the module then follows that run (C(changed=false)).
author:
  - Basil contributors (@basil-project)
options:
  job:
    description:
      - The job's id.
    type: str
    required: true
    aliases: [id]
  wait:
    description:
      - Wait until the run has ended.
    type: bool
    default: true
  wait_timeout:
    description:
      - Seconds to wait before failing.
    type: int
    default: 1800
  poll_interval:
    description:
      - Seconds between two reads of the run.
    type: float
    default: 2
  fail_on_skipped:
    description:
      - Fail when the run was skipped (for example collection while vCenter is unreachable).
    type: bool
    default: false
extends_documentation_fragment:
  - basil.vsphere.connection
attributes:
  check_mode:
    description: Reports that it would run the job, and does not.
    support: full
  diff_mode:
    description: Nothing to diff.
    support: none
notes:
  - Needs the admin role.
"""

EXAMPLES = r"""
- name: Collect the latest performance samples now
  basil.vsphere.basil_job:
    basil_url: https://basil.example.com:8443
    basil_token: "{{ basil_admin_token }}"
    job: collect

- name: Refit the device and workload models
  basil.vsphere.basil_job:
    basil_url: https://basil.example.com:8443
    job: model
  register: model
"""

RETURN = r"""
run:
  description: The run (C(id), C(job), C(started), C(finished), C(outcome), C(message), C(details)).
  returned: unless in check mode
  type: dict
outcome:
  description: running (O(wait=false)), succeeded, failed or skipped.
  returned: unless in check mode
  type: str
  sample: succeeded
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.basil.vsphere.plugins.module_utils.basil_api import (
    BasilClient,
    BasilError,
    module_kwargs,
    path_segment,
)


def main():
    spec = dict(
        job=dict(type="str", required=True, aliases=["id"]),
        wait=dict(type="bool", default=True),
        wait_timeout=dict(type="int", default=1800),
        poll_interval=dict(type="float", default=2),
        fail_on_skipped=dict(type="bool", default=False),
    )
    module = AnsibleModule(**module_kwargs(spec, supports_check_mode=True))
    client = BasilClient(module)
    job = module.params["job"]
    changed = True
    try:
        jobs = client.get("/jobs") or []
        if job not in [j.get("id") for j in jobs]:
            module.fail_json(
                msg="job: no job %r in Basil (jobs: %s)" % (job, ", ".join(sorted(j.get("id", "") for j in jobs)))
            )
        if module.check_mode:
            module.exit_json(changed=True, msg="would run job %s" % job)
        try:
            run = client.run_job(
                job, module.params["wait"], module.params["wait_timeout"], module.params["poll_interval"]
            )
        except BasilError as err:
            if err.status != 409:
                raise
            # Already running: follow the run in progress instead of starting another one.
            changed = False
            latest = client.get("/jobs/%s/runs" % path_segment(job), query=dict(limit=1))
            run = latest[0] if latest else None
            if run is None:
                raise
            if module.params["wait"] and run.get("outcome") == "running":
                run_path = "/jobs/%s/runs/%s" % (path_segment(job), run["id"])

                def ended():
                    current = client.get(run_path)
                    return current if current.get("outcome") != "running" else None

                run = client.wait_for(
                    "job %s run %s" % (job, run["id"]), ended,
                    module.params["wait_timeout"], module.params["poll_interval"],
                )
    except BasilError as err:
        client.fail(err)
    outcome = run.get("outcome")
    if outcome == "failed" or (outcome == "skipped" and module.params["fail_on_skipped"]):
        module.fail_json(
            msg="job %s run %s %s: %s" % (job, run.get("id"), outcome, run.get("message")),
            changed=changed, run=run, outcome=outcome,
        )
    module.exit_json(changed=changed, run=run, outcome=outcome)


if __name__ == "__main__":
    main()
