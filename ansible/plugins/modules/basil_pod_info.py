#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: Basil contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: basil_pod_info
short_description: Basil's pods, their imbalance and their datastores' load
version_added: "0.1.0"
description:
  - Reads the pods (datastore clusters) Basil balances, with each pod's imbalance f = sigma/mu of its
    datastores' normalized loads, its threshold, and per datastore the normalized load N, the device
    model's P, latency and IOPS.
author:
  - Basil contributors (@basil-project)
options:
  pod:
    description:
      - One pod's name; all pods when left out.
    type: str
extends_documentation_fragment:
  - basil.vsphere.connection
attributes:
  check_mode:
    description: Can run in check mode and return the same facts.
    support: full
  diff_mode:
    description: Reads only; there is nothing to diff.
    support: none
"""

EXAMPLES = r"""
- name: Every pod Basil balances
  basil.vsphere.basil_pod_info:
    basil_url: https://basil.example.com:8443
    basil_token: "{{ basil_viewer_token }}"
    ca_path: /etc/basil/tls/basil.crt
  register: basil

- name: Pods over their threshold
  ansible.builtin.debug:
    msg: "{{ basil.pods | selectattr('imbalance', 'gt', 0.2) | map(attribute='name') | list }}"

- name: One pod, with its datastores' normalized load, P and latency
  basil.vsphere.basil_pod_info:
    basil_url: https://basil.example.com:8443
    pod: gold
  register: gold
"""

RETURN = r"""
pods:
  description: The pods (one when O(pod) is given), as Basil's GET /api/v1/pods/{pod} returns them.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: The pod's name in Basil's configuration.
      type: str
      sample: gold
    imbalance:
      description: f = sigma/mu of the datastores' normalized loads; null before the first model.
      type: float
      sample: 0.41
    threshold:
      description: The imbalance at or below which Basil recommends no move.
      type: float
      sample: 0.1
    mode:
      description: manual or automatic.
      type: str
    datastores:
      description: Per datastore id, name, normalized_load (N), P, latency_ms, iops, capacity_gb, free_gb.
      type: list
      elements: dict
datastores:
  description: Every datastore of the returned pods, flattened, each with its C(pod).
  returned: always
  type: list
  elements: dict
  sample: [{"pod": "gold", "name": "6diskLUN", "normalized_load": 1.9, "P": 5.1, "latency_ms": 31.0}]
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.basil.vsphere.plugins.module_utils.basil_api import (
    BasilClient,
    BasilError,
    module_kwargs,
    path_segment,
)


def main():
    module = AnsibleModule(**module_kwargs(dict(pod=dict(type="str")), supports_check_mode=True))
    client = BasilClient(module)
    pod = module.params["pod"]
    try:
        if pod:
            pods = [client.get("/pods/%s" % path_segment(pod))]
        else:
            pods = client.get("/pods") or []
    except BasilError as err:
        client.fail(err)
    datastores = []
    for p in pods:
        for ds in p.get("datastores") or []:
            entry = dict(ds)
            entry["pod"] = p.get("name")
            datastores.append(entry)
    module.exit_json(changed=False, pods=pods, datastores=datastores)


if __name__ == "__main__":
    main()
