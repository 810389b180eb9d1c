# -*- coding: utf-8 -*-
# Copyright: Basil contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    # The connection options of every module of basil.vsphere (module_utils/basil_api.py).
    DOCUMENTATION = r"""
options:
  basil_url:
    description:
      - The address of Basil's service, for example V(https://basil.example.com:8443).
      - The modules add C(/api/v1/...) themselves.
      - Taken from the E(BASIL_URL) environment variable when not given.
    type: str
    required: true
  basil_token:
    description:
      - "An API token (C(basil token create NAME --role operator)), sent as C(Authorization: Bearer ...)."
      - Reads need the viewer role, changes the operator role, jobs and the rebalance window the admin role.
      - Taken from E(BASIL_TOKEN) when not given. Exactly one of O(basil_token) and O(vc_session) is needed.
    type: str
  vc_session:
    description:
      - A vCenter session instead of a token, sent as C(X-Basil-VC-Session); Basil checks it with vCenter
        and maps the user's vSphere privileges to a role.
      - Taken from E(BASIL_VC_SESSION) when not given. Needs O(vc_server).
    type: str
  vc_server:
    description:
      - The vCenter the session belongs to (its name in Basil's configuration, or host[:port]),
        sent as C(X-Basil-VC-Server). Taken from E(BASIL_VC_SERVER) when not given.
    type: str
  validate_certs:
    description:
      - Verify Basil's TLS certificate. Leave it on; point O(ca_path) at Basil's CA instead.
    type: bool
    default: true
  ca_path:
    description:
      - A PEM file of the CA (or self-signed certificate) to verify Basil's certificate against.
      - Taken from E(BASIL_CA_PATH) when not given.
    type: path
  request_timeout:
    description:
      - Seconds to wait for each answer of Basil.
    type: int
    default: 60
notes:
  - The modules use C(ansible.module_utils.urls) only; nothing needs to be installed on the managed node.
  - Errors name the request, Basil's status and message, and every problem with its field.
"""
