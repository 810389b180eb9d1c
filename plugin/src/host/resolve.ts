// From what the vSphere Client names (a context object) to what Basil's API names (an id), and back
// (an object URN for htmlClientSdk.app.navigateTo).

import type { PodSummary, VCenter } from '../api/types';
import { basilId, type ContextObject, contextUrn, moidOf, vcenterOf } from './contextObject';

/** Basil's id for a context object, given the configured vCenters. */
export function resolveContextId(ctx: ContextObject, vcenters: VCenter[]): string {
  const vc = vcenters.find((v) => v.instance_uuid && ctx.serverGuid && v.instance_uuid === ctx.serverGuid);
  return basilId(ctx.moid, vc?.name ?? (vcenters.length === 1 ? vcenters[0].name : null), vcenters.length);
}

/** The pod a StoragePod (datastore cluster) is, by the storage_pod id the service reports. */
export function podForStoragePod(storagePodId: string, pods: PodSummary[]): PodSummary | null {
  return pods.find((p) => p.storage_pod === storagePodId) ?? pods.find((p) => p.storage_pod && moidOf(p.storage_pod) === moidOf(storagePodId) && !vcenterOf(storagePodId)) ?? null;
}

/** The StoragePod (datastore cluster) id of the pod named `name`, when the service reports one. */
export function storagePodOf(name: string, pods: PodSummary[]): string | null {
  return pods.find((p) => p.name === name)?.storage_pod ?? null;
}

/** The URN of a Basil object for the vSphere Client, when the vCenter's instance uuid is known. */
export function urnFor(type: string, id: string, vcenters: VCenter[], currentGuid: string | null): string | null {
  const prefix = vcenterOf(id);
  const vc = prefix ? vcenters.find((v) => v.name === prefix) : vcenters.length === 1 ? vcenters[0] : undefined;
  const guid = vc?.instance_uuid ?? (vcenters.length <= 1 ? currentGuid : null);
  return guid ? contextUrn(type, moidOf(id), guid) : null;
}
