"""Tags read through the Automation SDK from the lab's tagging service."""

from __future__ import annotations

import pytest

from basil.vcenter.connection import VCenterConnection
from basil.vcenter.errors import VCenterAuthenticationError
from basil.vcenter.inventory import fetch_inventory
from basil.vcenter.tags import read_tags

from .labvc import LabVC

pytestmark = pytest.mark.lab


def test_tags_match_the_scenario(lab_vc: LabVC, conn: VCenterConnection) -> None:
    categories, tags, assignments = read_tags(conn)
    inv = fetch_inventory(conn, with_tags=False)
    expected: dict[str, set[str]] = {}
    for vm in lab_vc.scenario["vms"]:
        expected[inv.vm_by_name(vm["name"]).moid] = set(vm.get("tags", []))
    for ds in lab_vc.scenario["datastores"]:
        expected[inv.datastore_by_name(ds["name"]).moid] = set(ds.get("tags", []))
    got = {moid: {tags[t].path for t in ids} for moid, ids in assignments.items()}
    assert got == {k: v for k, v in expected.items() if v}
    assert {c.name for c in categories.values()} == {p.split("/")[0] for v in expected.values() for p in v}


def test_tags_need_a_password(lab_vc: LabVC, conn: VCenterConnection) -> None:
    cookie = conn._soap.GetSessionId()
    borrowed = VCenterConnection(lab_vc.connection_params(user=None, password=None, session_cookie=cookie))
    with borrowed, pytest.raises(VCenterAuthenticationError, match="needs a user and password"):
        read_tags(borrowed)


def test_a_pinned_thumbprint_reads_tags_without_insecure_request_warnings(
    lab_vc: LabVC, lab_thumbprint: str
) -> None:
    import warnings  # noqa: PLC0415

    from basil.vcenter.connection import TLSOptions  # noqa: PLC0415

    with VCenterConnection(lab_vc.connection_params(tls=TLSOptions(thumbprint=lab_thumbprint))) as pinned:
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            _, tags, _ = read_tags(pinned)
        assert tags
    assert [str(w.message) for w in seen] == []


def test_the_pin_survives_the_adapters_the_automation_sdk_mounts(lab_vc: LabVC) -> None:
    import requests  # noqa: PLC0415

    from basil.vcenter.connection import TLSOptions, pinned_or_plain_session  # noqa: PLC0415

    session = pinned_or_plain_session(TLSOptions(thumbprint="ab" * 32))  # not the lab's certificate
    session.mount("https://", requests.adapters.HTTPAdapter(pool_maxsize=4))  # as the SDK does
    with pytest.raises(requests.exceptions.SSLError, match=r"[Ff]ingerprint"):
        session.get(f"https://{lab_vc.server}/api", timeout=10)
