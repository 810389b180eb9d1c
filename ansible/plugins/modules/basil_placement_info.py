#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: Basil contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: basil_placement_info
short_description: Rank a pod's datastores for a new virtual disk
version_added: "0.1.0"
description:
  - Asks Basil where a new disk with the given size and expected workload should go (BASIL's initial
    placement). Basil ranks the pod's datastores by the normalized load the disk would give them, and
    lists the ones left out with the reason. Nothing is created or moved.
author:
  - Basil contributors (@basil-project)
options:
  pod:
    description:
      - The pod whose datastores to rank.
    type: str
    required: true
  size_gb:
    description:
      - The disk's size in GB.
    type: float
    required: true
  oio:
    description:
      - Expected outstanding IOs.
    type: float
    required: true
  io_size_kb:
    description:
      - Expected IO size in KB.
    type: float
    required: true
  read_pct:
    description:
      - Expected share of reads, 0 to 100.
    type: float
    required: true
  random_pct:
    description:
      - Expected share of random IO, 0 to 100.
    type: float
    required: true
  vm:
    description:
      - The id Basil gives the VM the disk is for, for example V(lab:vm-42) (its other disks count for
        keep-together rules).
    type: str
  hosts:
    description:
      - Hosts that must see the datastore.
    type: list
    elements: str
extends_documentation_fragment:
  - basil.vsphere.connection
attributes:
  check_mode:
    description: Runs the same in check mode; it changes nothing.
    support: full
  diff_mode:
    description: Nothing to diff.
    support: none
"""

EXAMPLES = r"""
- name: Where should a 40 GB OLTP disk go?
  basil.vsphere.basil_placement_info:
    basil_url: https://basil.example.com:8443
    basil_token: "{{ basil_operator_token }}"
    pod: gold
    size_gb: 40
    oio: 16
    io_size_kb: 8
    read_pct: 70
    random_pct: 100
  register: placement

- name: Create the disk there
  community.vmware.vmware_guest_disk:
    hostname: "{{ vcenter }}"
    name: oltp-3
    datacenter: dc1
    disk:
      - size_gb: 40
        datastore: "{{ placement.best_datastore }}"
        scsi_controller: 0
        unit_number: 2
"""

RETURN = r"""
best:
  description: The best-ranked datastore (C(datastore) id, C(datastore_name), C(n_before), C(n_after),
    C(imbalance_after), C(reason)); null when none fits.
  returned: always
  type: dict
  sample: {"datastore": "datastore-32", "datastore_name": "9diskLUN", "rank": 1}
best_datastore:
  description: The best-ranked datastore's name, ready for a C(datastore) option; null when none fits.
  returned: always
  type: str
  sample: 9diskLUN
ranked:
  description: The datastores that can take the disk, best first.
  returned: always
  type: list
  elements: dict
excluded:
  description: The datastores left out, each with its reason.
  returned: always
  type: list
  elements: dict
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.basil.vsphere.plugins.module_utils.basil_api import (
    BasilClient,
    BasilError,
    module_kwargs,
    without_none,
)

FIELDS = ("pod", "size_gb", "oio", "io_size_kb", "read_pct", "random_pct", "vm", "hosts")


def main():
    spec = dict(
        pod=dict(type="str", required=True),
        size_gb=dict(type="float", required=True),
        oio=dict(type="float", required=True),
        io_size_kb=dict(type="float", required=True),
        read_pct=dict(type="float", required=True),
        random_pct=dict(type="float", required=True),
        vm=dict(type="str"),
        hosts=dict(type="list", elements="str"),
    )
    module = AnsibleModule(**module_kwargs(spec, supports_check_mode=True))
    client = BasilClient(module)
    body = without_none(dict((k, module.params[k]) for k in FIELDS))
    try:
        answer = client.post("/placement", body, expect=(200,))
    except BasilError as err:
        client.fail(err)
    ranked = answer.get("ranked") or []
    module.exit_json(
        changed=False,
        best=ranked[0] if ranked else None,
        best_datastore=ranked[0].get("datastore_name") if ranked else None,
        ranked=ranked,
        excluded=answer.get("excluded") or [],
        pod=answer.get("pod"),
    )


if __name__ == "__main__":
    main()
