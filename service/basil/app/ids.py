"""The ids the API shows: vCenter managed object ids, prefixed with the vCenter's name when there are several.

Datastores and VMs are ``datastore-42`` or ``vc1:datastore-42``; disks are ``<vm id>:<instance>``
(``vm-17:scsi0:1``). Parsing accepts the prefixed form even with one vCenter, so a client that always
prefixes keeps working when a second vCenter is added.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from basil.errors import NotFoundError


@dataclass(frozen=True)
class IdSpace:
    """The configured vCenters, in order; the first one is meant when an id carries no prefix."""

    vcenters: Sequence[str]

    @property
    def prefixed(self) -> bool:
        return len(self.vcenters) > 1

    def object_id(self, vcenter: str, moid: str) -> str:
        return f"{vcenter}:{moid}" if self.prefixed else moid

    def disk_id(self, vcenter: str, vm: str, instance: str) -> str:
        return f"{self.object_id(vcenter, vm)}:{instance}"

    def parse_object(self, text: str, what: str = "object") -> tuple[str, str]:
        """(vcenter, moid) of an object id."""
        head, sep, tail = text.partition(":")
        if sep:
            if head not in self.vcenters:
                raise NotFoundError(f"no vCenter named {head!r} (in {what} id {text!r})")
            return head, tail
        if not self.vcenters:
            raise NotFoundError(f"no vCenter is configured (looking for {what} {text!r})")
        return self.vcenters[0], text

    def parse_disk(self, text: str) -> tuple[str, str, str]:
        """(vcenter, vm moid, instance) of a disk id ``[vc:]vm-17:scsi0:1``."""
        parts = text.split(":")
        if len(parts) < 3:
            raise NotFoundError(f"{text!r} is not a disk id (expected <vm id>:<controller>:<unit>)")
        instance = ":".join(parts[-2:])
        vcenter, vm = self.parse_object(":".join(parts[:-2]), "disk")
        return vcenter, vm, instance
