#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: Basil contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: basil_pool
short_description: A Storage Resource Pool tree as desired state
version_added: "0.1.0"
description:
  - Makes Basil's pool tree O(name) for one datastore what the play says (O(state=present)), or removes it
    (O(state=absent)). Basil's SRP loop then turns the tree into per-disk IO reservations, limits and
    shares in vCenter.
  - The tree is validated by Basil first (POST /api/v1/pools/validate); every problem is returned with its
    field, for example C(pools[0].children[1].vm), and nothing is changed.
  - A tree that already matches is left alone (C(changed=false)); a different one is replaced with the
    version read, so a concurrent change makes the module fail instead of overwriting it.
author:
  - Basil contributors (@basil-project)
options:
  name:
    description:
      - The tree's name.
    type: str
    required: true
  state:
    description:
      - V(present) creates or replaces the tree; V(absent) deletes it (the per-disk settings it made stay
        until something changes them).
    type: str
    choices: [present, absent]
    default: present
  datastore:
    description:
      - The datastore's name or managed object id. Required with O(state=present).
    type: str
  vcenter:
    description:
      - The vCenter's name in Basil's configuration (the first one when left out).
    type: str
  sioc:
    description:
      - Enable Storage IO Control on the datastore, with the tree's congestion threshold.
    type: bool
  root:
    description:
      - The root's controls, C(reservation) and C(limit) in IOPS (C(limit) may be V(unlimited)) and
        C(shares) (a number or low/normal/high).
    type: dict
  pools:
    description:
      - The pools under the root; each is a pool (C(name), controls, C(children)), a VM or disk leaf
        (C(vm), optional C(disk)) or a tag leaf (C(tag)). See Basil's README, "Storage Resource Pools".
    type: list
    elements: dict
extends_documentation_fragment:
  - basil.vsphere.connection
attributes:
  check_mode:
    description: Validates the tree with Basil and reports whether it would change; saves nothing.
    support: full
  diff_mode:
    description: Shows the tree before and after.
    support: full
"""

EXAMPLES = r"""
- name: Gold VMs get a reservation on 6diskLUN, the rest share what is left
  basil.vsphere.basil_pool:
    basil_url: https://basil.example.com:8443
    basil_token: "{{ basil_operator_token }}"
    name: lun6-pools
    datastore: 6diskLUN
    sioc: true
    root: {reservation: 1000, limit: unlimited, shares: 1000}
    pools:
      - name: gold
        shares: high
        children:
          - {vm: oltp-1, reservation: 400}
      - name: rest
        shares: low
        children:
          - {vm: webserver-1}
          - {vm: webserver-2, limit: 200}

- name: Remove the tree
  basil.vsphere.basil_pool:
    basil_url: https://basil.example.com:8443
    name: lun6-pools
    state: absent
"""

RETURN = r"""
pool:
  description: The tree as Basil keeps it (null after O(state=absent)), with its C(version).
  returned: always
  type: dict
problems:
  description: Basil's validation problems, each with C(field) and C(message) (on failure).
  returned: on failure
  type: list
  elements: dict
  sample: [{"field": "pools[0].children[0].vm", "message": "no VM 'oltp-9' in vCenter lab"}]
action:
  description: create, replace, delete or none.
  returned: always
  type: str
"""

import copy

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.basil.vsphere.plugins.module_utils.basil_api import (
    BasilClient,
    BasilError,
    module_kwargs,
    path_segment,
)

# The fields of a tree the module owns; the rest (version, updated_at, datastore_id...) are Basil's.
FIELDS = ("datastore", "vcenter", "sioc", "root", "pools")
DEFAULTS = dict(sioc=False, root={}, pools=[])


def desired_document(params):
    """The pool document the play describes."""
    doc = dict(name=params["name"])
    for key in FIELDS:
        if params.get(key) is not None:
            doc[key] = copy.deepcopy(params[key])
    return doc


def comparable(doc, keys):
    """The fields of *doc* that the comparison looks at, with Basil's defaults for absent ones."""
    out = {}
    for key in keys:
        value = doc.get(key)
        out[key] = DEFAULTS.get(key) if value is None else value
    return out


def differences(current, desired):
    """The owned fields whose values differ (vcenter only when the play names one)."""
    keys = [k for k in FIELDS if k != "vcenter" or desired.get("vcenter") is not None]
    have, want = comparable(current, keys), comparable(desired, keys)
    return [k for k in keys if have[k] != want[k]]


def main():
    spec = dict(
        name=dict(type="str", required=True),
        state=dict(type="str", default="present", choices=["present", "absent"]),
        datastore=dict(type="str"),
        vcenter=dict(type="str"),
        sioc=dict(type="bool"),
        root=dict(type="dict"),
        pools=dict(type="list", elements="dict"),
    )
    module = AnsibleModule(
        **module_kwargs(spec, supports_check_mode=True, required_if=[("state", "present", ("datastore",))])
    )
    client = BasilClient(module)
    name = module.params["name"]
    path = "/pools/%s" % path_segment(name)
    try:
        current = client.get_or_none(path)
        if module.params["state"] == "absent":
            result = dict(changed=current is not None, action="delete" if current else "none", pool=None)
            if current is not None and not module.check_mode:
                client.delete(path, query=dict(version=current["version"]), expect=(204,))
            if module._diff:
                result["diff"] = dict(before=_shown(current), after={})
            module.exit_json(**result)

        desired = desired_document(module.params)
        checked = client.post("/pools/validate", desired, expect=(200,))
        problems = checked.get("problems") or []
        if not checked.get("valid", not problems):
            module.fail_json(
                msg="pool tree %s is invalid: %s"
                % (name, "; ".join("%s: %s" % (p["field"], p["message"]) for p in problems)),
                problems=problems,
            )
        if current is None:
            action = "create"
        elif differences(current, desired):
            action = "replace"
        else:
            action = "none"
        pool = current
        if action != "none" and not module.check_mode:
            if action == "create":
                pool = client.post("/pools", desired, expect=(201,))
            else:
                body = dict(desired)
                body["version"] = current["version"]
                pool = client.put(path, body)
        result = dict(changed=action != "none", action=action, pool=pool)
        if module._diff:
            after = dict(desired)
            if current is not None and desired.get("vcenter") is None:
                after["vcenter"] = current.get("vcenter")
            result["diff"] = dict(before=_shown(current), after=_shown(after))
        module.exit_json(**result)
    except BasilError as err:
        client.fail(err)


def _shown(doc):
    """The owned fields of *doc* for the diff ({} for no tree)."""
    if not doc:
        return {}
    shown = dict(name=doc.get("name"))
    shown.update(comparable(doc, [k for k in FIELDS if doc.get(k) is not None or k in DEFAULTS]))
    return shown


if __name__ == "__main__":
    main()
