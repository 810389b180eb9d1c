#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: Basil contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: basil_recommendation
short_description: Compute or read a pod's recommended Storage vMotions
version_added: "0.1.0"
description:
  - Returns the pod's latest recommendation (BASIL's balancing round) with its moves, the imbalance
    before and after, and the budget it uses (move count and GB).
  - With O(compute=true) Basil runs a balancing round now on the pod's current models first.
  - A recommendation is advice stored in Basil; nothing moves until a plan is applied
    (M(basil.vsphere.basil_plan)). The module therefore always reports C(changed=false).
author:
  - Basil contributors (@basil-project)
options:
  pod:
    description:
      - The pod's name in Basil's configuration.
    type: str
    required: true
  compute:
    description:
      - Compute a recommendation now (needs the operator role) instead of reading the latest one.
      - Also done in check mode, since it changes nothing in vCenter.
    type: bool
    default: false
extends_documentation_fragment:
  - basil.vsphere.connection
attributes:
  check_mode:
    description: Runs the same in check mode; computing a recommendation moves nothing.
    support: full
  diff_mode:
    description: Nothing to diff.
    support: none
"""

EXAMPLES = r"""
- name: What would Basil move in the gold pod now?
  basil.vsphere.basil_recommendation:
    basil_url: https://basil.example.com:8443
    basil_token: "{{ basil_operator_token }}"
    pod: gold
    compute: true
  register: rec

- name: Show the moves
  ansible.builtin.debug:
    msg: "{{ item.vm }} {{ item.disk }}: {{ item.from }} -> {{ item.to }} ({{ item.size_gb }} GB)"
  loop: "{{ rec.recommendation.moves }}"
"""

RETURN = r"""
recommendation:
  description: The recommendation as Basil returns it (null when the pod has none yet and O(compute=false)).
  returned: always
  type: dict
  contains:
    id:
      description: Its id; pass it to M(basil.vsphere.basil_plan) as O(basil.vsphere.basil_plan#module:recommendation_id).
      type: int
    moves:
      description: Each move's disk, vm, from, to, size_gb, reason and the N of both datastores before and after.
      type: list
      elements: dict
    before:
      description: The pod's imbalance and normalized loads before the moves.
      type: dict
    after:
      description: The same, predicted after the moves.
      type: dict
imbalance_before:
  description: The pod's imbalance before the recommended moves.
  returned: when there is a recommendation
  type: float
  sample: 0.93
imbalance_after:
  description: The imbalance Basil predicts after them.
  returned: when there is a recommendation
  type: float
  sample: 0.08
move_count:
  description: How many Storage vMotions it recommends.
  returned: always
  type: int
  sample: 2
total_gb:
  description: The GB they copy.
  returned: always
  type: float
  sample: 20.0
stop_reason:
  description: Why Basil's round stopped where it did, for example the pod is under its threshold, or the disks
    that could lower its imbalance are pinned (recently moved, excluded, anti-affine; see pinned_blocking_total).
  returned: when there is a recommendation
  type: str
  sample: "no eligible disk lowers the imbalance; 2 disks that could are pinned (see pinned_blocking)"
pinned_blocking_total:
  description: How many disks that could lower the imbalance are pinned (listed in the recommendation's
    pinned_blocking with their reasons).
  returned: always
  type: int
  sample: 0
computed:
  description: Whether this run computed the recommendation.
  returned: always
  type: bool
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.basil.vsphere.plugins.module_utils.basil_api import (
    BasilClient,
    BasilError,
    module_kwargs,
    path_segment,
)


def describe(recommendation):
    """The figures a play gates on, from a recommendation (or None)."""
    if not recommendation:
        return dict(move_count=0, total_gb=0.0, pinned_blocking_total=0)
    moves = recommendation.get("moves") or []
    out = dict(
        move_count=len(moves),
        total_gb=round(sum(float(m.get("size_gb") or 0) for m in moves), 3),
        stop_reason=recommendation.get("stop_reason"),
        pinned_blocking_total=int(recommendation.get("pinned_blocking_total") or 0),
    )
    for side in ("before", "after"):
        state = recommendation.get(side) or {}
        out["imbalance_%s" % side] = state.get("imbalance")
    return out


def main():
    spec = dict(pod=dict(type="str", required=True), compute=dict(type="bool", default=False))
    module = AnsibleModule(**module_kwargs(spec, supports_check_mode=True))
    client = BasilClient(module)
    path = "/pods/%s/recommendations" % path_segment(module.params["pod"])
    try:
        if module.params["compute"]:
            recommendation = client.post(path, expect=(201,))
        else:
            recommendation = client.get_or_none(path)
            if recommendation is None:
                client.get("/pods/%s" % path_segment(module.params["pod"]))  # an unknown pod fails here
    except BasilError as err:
        client.fail(err)
    result = dict(changed=False, recommendation=recommendation, computed=module.params["compute"])
    result.update(describe(recommendation))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
