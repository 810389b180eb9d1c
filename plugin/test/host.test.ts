import { describe, expect, it } from 'vitest';
import type { PodSummary, VCenter } from '../src/api/types';
import { basilId, moidOf, parseContextId, vcenterOf } from '../src/host/contextObject';
import { podForStoragePod, resolveContextId, storagePodOf, urnFor } from '../src/host/resolve';
import { parseRoute, routeHash } from '../src/host/routes';
import { fixture } from './helpers';

describe('context objects', () => {
  it('parses the vSphere Client’s object URNs', () => {
    expect(parseContextId('urn:vmomi:Datastore:datastore-42:0a1b-2c3d')).toEqual({
      type: 'Datastore',
      moid: 'datastore-42',
      serverGuid: '0a1b-2c3d',
      raw: 'urn:vmomi:Datastore:datastore-42:0a1b-2c3d',
    });
    expect(parseContextId('urn:vmomi:VirtualMachine:vm-17')?.serverGuid).toBeNull();
    expect(parseContextId('datastore-42')).toBeNull();
    expect(parseContextId('urn:other:Datastore:datastore-42:x')).toBeNull();
  });

  it('prefixes ids with the vCenter name only when several are configured', () => {
    const one = fixture<VCenter[]>('vcenters.json');
    const two: VCenter[] = [...one.map((v) => ({ ...v, instance_uuid: 'guid-1' })), { name: 'vc2', connected: true, instance_uuid: 'guid-2' }];
    const ctx = parseContextId('urn:vmomi:Datastore:datastore-42:guid-2');
    expect(ctx && resolveContextId(ctx, one)).toBe('datastore-42');
    expect(ctx && resolveContextId(ctx, two)).toBe('vc2:datastore-42');
    expect(basilId('vm-1', 'lab', 1)).toBe('vm-1');
    expect(moidOf('vc2:datastore-42')).toBe('datastore-42');
    expect(vcenterOf('vc2:datastore-42')).toBe('vc2');
    expect(vcenterOf('datastore-42')).toBeNull();
  });

  it('builds the URN to open an object, when the vCenter uuid is known', () => {
    const vcs = fixture<VCenter[]>('vcenters.json'); // the service reports each vCenter's instance uuid
    const guid = vcs[0].instance_uuid;
    expect(guid).toBeTruthy();
    expect(urnFor('Datastore', 'datastore-103', vcs, null)).toBe(`urn:vmomi:Datastore:datastore-103:${guid}`);
    expect(urnFor('Datastore', 'datastore-103', vcs, 'ctx-guid')).toBe(`urn:vmomi:Datastore:datastore-103:${guid}`);
    expect(urnFor('Datastore', 'datastore-103', [{ name: 'lab', connected: true }], 'ctx-guid')).toBe('urn:vmomi:Datastore:datastore-103:ctx-guid');
    expect(urnFor('Datastore', 'datastore-103', [{ name: 'lab', connected: true }], null)).toBeNull();
  });

  it('maps a StoragePod to the pod the service says it is, and back', () => {
    const pods = fixture<PodSummary[]>('pods.json');
    const storagePod = pods[0].storage_pod as string;
    expect(storagePod).toMatch(/^group-p\d+$/);
    expect(podForStoragePod(storagePod, pods)?.name).toBe(pods[0].name);
    expect(podForStoragePod(`${storagePod}0`, pods)).toBeNull();
    expect(storagePodOf(pods[0].name, pods)).toBe(storagePod);
    expect(storagePodOf('no-such-pod', pods)).toBeNull();
    // With several vCenters the service prefixes ids with the vCenter's name.
    const two = pods.map((p) => ({ ...p, storage_pod: `lab:${storagePod}` }));
    expect(podForStoragePod(`lab:${storagePod}`, two)?.name).toBe(pods[0].name);
    expect(podForStoragePod(`vc2:${storagePod}`, two)).toBeNull();
  });
});

describe('routes', () => {
  it.each([
    ['', { view: 'global', tab: 'pods' }],
    ['#/pools', { view: 'global', tab: 'pools' }],
    ['#/nonsense', { view: 'global', tab: 'pods' }],
    ['#/datastore', { view: 'datastore', id: null }],
    ['#/datastore/vc1%3Adatastore-42', { view: 'datastore', id: 'vc1:datastore-42' }],
    ['#/storagepod', { view: 'pod', name: null, storagePod: null }],
    ['#/pod/basil-pod', { view: 'pod', name: 'basil-pod', storagePod: null }],
    ['#/vm/vm-17', { view: 'vm', id: 'vm-17' }],
  ])('%s', (hash, route) => {
    expect(parseRoute(hash)).toEqual(route);
    if (hash.startsWith('#/') && hash !== '#/nonsense') expect(routeHash(parseRoute(hash))).toBe(hash);
  });
});
