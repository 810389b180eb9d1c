// The vSphere Client names the object a view shows by a URN: urn:vmomi:<Type>:<moid>:<vCenter instance
// uuid>. The views need the type and managed object id; the uuid picks the vCenter.

export type ObjectType = 'Datastore' | 'StoragePod' | 'VirtualMachine';

export interface ContextObject {
  type: string;
  moid: string;
  serverGuid: string | null;
  raw: string;
}

/** Parses a context object id; null when it is not a vmomi URN. */
export function parseContextId(id: string): ContextObject | null {
  const parts = id.split(':');
  if (parts.length < 4 || parts[0] !== 'urn' || parts[1] !== 'vmomi') return null;
  const type = parts[2];
  const moid = parts[3];
  if (!type || !moid) return null;
  // The uuid itself has no colons; anything after it is kept rather than dropped.
  const guid = parts.slice(4).join(':');
  return { type, moid, serverGuid: guid === '' ? null : guid, raw: id };
}

export function contextUrn(type: string, moid: string, serverGuid: string): string {
  return `urn:vmomi:${type}:${moid}:${serverGuid}`;
}

/**
 * Basil's id for a vCenter object: the bare moid when one vCenter is configured, `<vcenter>:<moid>` when
 * several are (API-CONTRACT.md "Ids").
 */
export function basilId(moid: string, vcenterName: string | null, vcenterCount: number): string {
  return vcenterCount > 1 && vcenterName ? `${vcenterName}:${moid}` : moid;
}

/** The managed object id inside a Basil id (`vc1:datastore-42` → `datastore-42`). */
export function moidOf(basilObjectId: string): string {
  const i = basilObjectId.lastIndexOf(':');
  return i < 0 ? basilObjectId : basilObjectId.slice(i + 1);
}

/** The vCenter prefix of a Basil id, or null when it has none. */
export function vcenterOf(basilObjectId: string): string | null {
  const i = basilObjectId.lastIndexOf(':');
  return i < 0 ? null : basilObjectId.slice(0, i);
}
