# -*- coding: utf-8 -*-
# Copyright: Basil contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.basil.vsphere.plugins.module_utils import basil_api


def test_errors_name_the_request_the_status_and_every_field():
    err = basil_api.BasilError(
        "POST", "/pools", 400, "invalid pool tree", "invalid",
        [dict(field="root.limit", message="must be at least the reservation")],
    )
    assert err.describe() == (
        "POST /pools: HTTP 400 (invalid): Basil says: invalid pool tree; "
        "root.limit: must be at least the reservation"
    )
    assert err.result() == dict(status=400, error="invalid", problems=[
        dict(field="root.limit", message="must be at least the reservation")])


def test_unreachable_is_not_blamed_on_basil():
    err = basil_api.BasilError("GET", "/pods", -1, "Request failed: connection refused")
    assert err.describe() == "GET /pods: Request failed: connection refused"


def test_tls_is_verified_unless_a_play_says_otherwise():
    spec = basil_api.connection_argument_spec()
    assert spec["validate_certs"] == dict(type="bool", default=True)
    assert spec["basil_token"]["no_log"] is True
    assert spec["vc_session"]["no_log"] is True


def test_path_segments_are_encoded():
    assert basil_api.path_segment("gold/pod 1") == "gold%2Fpod%201"


def test_moves_keep_their_outcome():
    moves = [dict(id=1, disk="vm-1:scsi0:1", to="ds-2", state="failed", message="no space", extra=1)]
    assert basil_api.summarize_moves(moves) == [
        dict(id=1, disk="vm-1:scsi0:1", to="ds-2", state="failed", message="no space")]
