"""vSphere tags on VMs and datastores, read through the vSphere Automation SDK.

Pods, pool membership and exclusions can be defined by tags, which live in vCenter's tagging
service (the Automation API), not in the SOAP inventory. One Automation session per read: list
categories and tags, then one batched ``list_attached_objects_on_tags`` call for all tags.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable
from typing import Any

import requests

from basil.vcenter.connection import VCenterConnection
from basil.vcenter.errors import (
    VCenterAuthenticationError,
    VCenterConnectionError,
    VCenterError,
    VCenterTLSError,
)
from basil.vcenter.types import Tag, TagCategory

log = logging.getLogger(__name__)

#: Object types whose tags Basil reads.
TAGGED_TYPES = frozenset({"VirtualMachine", "Datastore"})

TagData = tuple[dict[str, TagCategory], dict[str, Tag], dict[str, tuple[str, ...]]]


def _vapi_error(err: Exception, server: str) -> VCenterError:
    """A typed error for a failure of the Automation API, carrying its own message."""
    name = type(err).__name__
    messages = [getattr(m, "default_message", "") for m in getattr(err, "messages", None) or ()]
    text = "; ".join(m for m in messages if m) or str(err) or name
    if name == "Unauthenticated":
        return VCenterAuthenticationError(f"reading tags on {server}: {text}", fault=name)
    if isinstance(err, requests.exceptions.SSLError):
        return VCenterTLSError(f"reading tags on {server}: the certificate is not trusted ({err})")
    if isinstance(err, requests.exceptions.RequestException):
        return VCenterConnectionError(f"reading tags on {server}: {name}: {err}")
    return VCenterError(f"reading tags on {server}: {name}: {text}", fault=name)


def _automation_sdk() -> tuple[Any, Any]:
    """The Automation SDK's error base class and client factory, imported on first use.

    The SDK takes about a second to import and only tag reads need it. Its generated bindings warn
    about their own deprecated types as they load (lazily, on first attribute access), and its
    runtime uses the deprecated ``importlib.resources.read_binary``: deprecation warnings raised from
    the SDK's own modules are the SDK's business and are ignored; nothing else is filtered.
    """
    warnings.filterwarnings("ignore", category=DeprecationWarning, module=r"(com\.vmware|vmware\.vapi)(\.|$)")
    from com.vmware.vapi.std.errors_client import Error  # noqa: PLC0415
    from vmware.vapi.vsphere.client import create_vsphere_client  # noqa: PLC0415

    return Error, create_vsphere_client


def _listed(call: Callable[[], Any], what: str, server: str) -> list[Any]:
    """The list an Automation API call answers, or a clear error when it answered something else.

    govmomi's stock simulator (vcsim) answers every tagging call with a null output: the SDK then
    fails to convert it (a ``TypeError`` about its ``VoidValue``) or hands back a non-list.
    """
    try:
        value = call()
    except TypeError as err:
        if "VoidValue" not in str(err):
            raise
        value = None
    if isinstance(value, list):
        return value
    answer = (
        "no data (null)"
        if value is None or type(value).__name__ == "VoidValue"
        else f"a {type(value).__name__}"
    )
    raise VCenterError(
        f"reading tags on {server}: the Automation API answered {what} with {answer}"
        "; it does not serve tagging (turn tags off for this vCenter if no pod uses them)",
        fault="TaggingUnavailable",
    )


def read_tags(conn: VCenterConnection) -> TagData:
    """Categories and tags by id, and the ids of the tags attached to each VM and datastore moid."""
    VapiError, create_vsphere_client = _automation_sdk()

    params = conn.params
    if params.user is None or params.password is None:
        raise VCenterAuthenticationError(
            f"reading tags on {params.server} needs a user and password (a SOAP session cookie "
            "does not open an Automation API session)"
        )
    host, port = params.host_port()
    server = host if port == 443 else f"{host}:{port}"
    session = conn.http_session()
    client: Any = None
    try:
        client = create_vsphere_client(
            server=server, username=params.user, password=params.password, session=session
        )
        tagging = client.tagging
        categories: dict[str, TagCategory] = {}
        for cid in _listed(tagging.Category.list, "the category list", params.server):
            c = tagging.Category.get(cid)
            categories[c.id] = TagCategory(id=c.id, name=c.name, cardinality=str(c.cardinality))
        tags: dict[str, Tag] = {}
        for tid in _listed(tagging.Tag.list, "the tag list", params.server):
            t = tagging.Tag.get(tid)
            cat = categories.get(t.category_id)
            tags[t.id] = Tag(
                id=t.id, name=t.name, category_id=t.category_id, category=cat.name if cat else ""
            )
        attached: dict[str, list[str]] = {}
        if tags:
            ids = list(tags)
            attachments = _listed(
                lambda: tagging.TagAssociation.list_attached_objects_on_tags(ids),
                "the tag associations",
                params.server,
            )
            for entry in attachments:
                for obj in entry.object_ids or ():
                    if obj.type in TAGGED_TYPES:
                        attached.setdefault(obj.id, []).append(entry.tag_id)
        assignments = {moid: tuple(sorted(ids)) for moid, ids in attached.items()}
        log.debug(
            "tags on %s: %d categories, %d tags, %d tagged objects",
            params.server,
            len(categories),
            len(tags),
            len(assignments),
        )
        return categories, tags, assignments
    except (VapiError, requests.exceptions.RequestException) as err:
        raise _vapi_error(err, params.server) from None
    finally:
        if client is not None:
            try:
                client.session_svc.delete()
            except (VapiError, requests.exceptions.RequestException) as err:
                log.info("closing the Automation session on %s: %s", params.server, type(err).__name__)
        session.close()
