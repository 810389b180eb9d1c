#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: Basil contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: basil_rebalance_window
short_description: Set or reset Basil's rebalance window
version_added: "0.1.0"
description:
  - The rebalance window is when Basil applies approved plans (and, for automatic pods, recommends and
    applies on its own), with a budget of moves and GB per window.
  - O(state=present) sets the fields given (only those that differ are sent); Basil keeps them in its
    store, where they win over the configuration file, also after a restart.
  - O(state=reset) forgets them, so the configuration file's window applies again.
author:
  - Basil contributors (@basil-project)
options:
  state:
    description:
      - V(present) sets the fields given; V(reset) goes back to the configuration's window.
    type: str
    choices: [present, reset]
    default: present
  enabled:
    description:
      - Whether the window opens at all.
    type: bool
  cron:
    description:
      - When the window opens, a five-field cron expression, for example V(0 1 * * *).
    type: str
  timezone:
    description:
      - The IANA time zone of O(cron), for example V(Europe/Paris).
    type: str
  duration:
    description:
      - How long the window stays open, for example V(4h) (at most 7d).
    type: str
  max_moves:
    description:
      - The most Storage vMotions per window.
    type: int
  max_gb:
    description:
      - The most GB copied per window.
    type: float
extends_documentation_fragment:
  - basil.vsphere.connection
attributes:
  check_mode:
    description: Reports what would change; changes nothing.
    support: full
  diff_mode:
    description: Shows the window's fields before and after.
    support: full
notes:
  - Needs the admin role.
"""

EXAMPLES = r"""
- name: Rebalance every night at 01:00 Paris time for four hours, at most 8 moves
  basil.vsphere.basil_rebalance_window:
    basil_url: https://basil.example.com:8443
    basil_token: "{{ basil_admin_token }}"
    cron: "0 1 * * *"
    timezone: Europe/Paris
    duration: 4h
    max_moves: 8
    max_gb: 500

- name: Back to the window of the configuration file
  basil.vsphere.basil_rebalance_window:
    basil_url: https://basil.example.com:8443
    state: reset
"""

RETURN = r"""
window:
  description: The rebalance window now in force (cron, timezone, duration, max_moves, max_gb, enabled,
    next_window, changed).
  returned: always
  type: dict
changed_fields:
  description: The fields set (or that would be set in check mode).
  returned: always
  type: list
  elements: str
"""

import re

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.basil.vsphere.plugins.module_utils.basil_api import (
    BasilClient,
    BasilError,
    module_kwargs,
)

FIELDS = ("enabled", "cron", "timezone", "duration", "max_moves", "max_gb")


UNITS = dict(w=604800, d=86400, h=3600, m=60, s=1)
DURATION = re.compile(r"^(?:(\d+(?:\.\d+)?)([wdhms]))+$")


def seconds(text):
    """Seconds of a duration like 4h or 1h30m (None when it is not one; Basil then says what is wrong)."""
    text = str(text).strip()
    if not DURATION.match(text):
        return None
    return int(round(sum(float(n) * UNITS[u] for n, u in re.findall(r"(\d+(?:\.\d+)?)([wdhms])", text))))


def to_change(window, params):
    """The fields the play gives whose value differs from the window in force."""
    out = {}
    for key in FIELDS:
        want = params.get(key)
        if want is None:
            continue
        have = window.get(key)
        if key == "max_gb" and have is not None:
            same = float(have) == float(want)
        elif key == "duration" and window.get("duration_s") is not None and seconds(want) is not None:
            same = seconds(want) == int(window["duration_s"])  # 3h and 180m are the same window
        else:
            same = have == want
        if not same:
            out[key] = want
    return out


def main():
    spec = dict(
        state=dict(type="str", default="present", choices=["present", "reset"]),
        enabled=dict(type="bool"),
        cron=dict(type="str"),
        timezone=dict(type="str"),
        duration=dict(type="str"),
        max_moves=dict(type="int"),
        max_gb=dict(type="float"),
    )
    module = AnsibleModule(**module_kwargs(spec, supports_check_mode=True))
    client = BasilClient(module)
    try:
        window = (client.get("/schedules") or {}).get("rebalance") or {}
        if module.params["state"] == "reset":
            stored = window.get("changed")
            changed = bool(stored)
            fields = sorted((stored or {}).get("fields", {}).keys()) if isinstance(stored, dict) else []
            after = window
            if changed and not module.check_mode:
                after = (client.delete("/schedules/rebalance", expect=(200,)) or {}).get("rebalance") or {}
        else:
            change = to_change(window, module.params)
            changed = bool(change)
            fields = sorted(change)
            after = window
            if changed and not module.check_mode:
                after = (client.put("/schedules/rebalance", change) or {}).get("rebalance") or {}
            elif changed:
                after = dict(window)
                after.update(change)
    except BasilError as err:
        client.fail(err)
    result = dict(changed=changed, window=after, changed_fields=fields)
    if module._diff:
        result["diff"] = dict(
            before=dict((k, window.get(k)) for k in FIELDS), after=dict((k, after.get(k)) for k in FIELDS)
        )
    module.exit_json(**result)


if __name__ == "__main__":
    main()
