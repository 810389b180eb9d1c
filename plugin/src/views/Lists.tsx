// The VM and datastore lists of the global view: a name search, sortable columns and "More" pages by
// the service's cursor, each row linking to the object's view.

import { useEffect, useRef, useState, type ReactNode } from 'react';
import { ApiError } from '../api/client';
import type { DatastoreItem, ListPage, ListQuery, VmItem } from '../api/types';
import { compact, gb, iops, ms } from '../shape/format';
import { appendPage, nextSort, sortMark, sortParam, type SortState } from '../shape/lists';
import { datastoreHash, ErrorAlert, ObjectLink, Section, Spinner, useApp, VmLink } from './common';

export const PAGE_SIZE = 50;
/** How long the search waits after the last keystroke before it asks the service. */
export const SEARCH_DELAY_MS = 250;

interface Paged<T> {
  rows: T[];
  loading: boolean;
  error: ApiError | null;
  hasMore: boolean;
  more(): void;
}

/** The rows of a list endpoint for one query: the first page on every change of the query, then more. */
function usePaged<T extends { id: string }>(fetchPage: (q: ListQuery) => Promise<ListPage<T>>, query: ListQuery): Paged<T> {
  const [rows, setRows] = useState<T[]>([]);
  const [cursor, setCursor] = useState<string | null>(null);
  const [loading, setLoading] = useState(true);
  const [error, setError] = useState<ApiError | null>(null);
  const fetchRef = useRef(fetchPage);
  fetchRef.current = fetchPage;
  // Every load carries the query it was asked for: an answer to an older query is dropped.
  const generation = useRef(0);
  const key = JSON.stringify(query);

  const load = (q: ListQuery, after: string | null, append: boolean) => {
    const gen = generation.current;
    setLoading(true);
    fetchRef
      .current({ ...q, cursor: after })
      .then((page) => {
        if (gen !== generation.current) return;
        setRows((shown) => (append ? appendPage(shown, page) : page.items));
        setCursor(page.next_cursor);
        setError(null);
      })
      .catch((err: unknown) => {
        if (gen !== generation.current) return;
        setError(err instanceof ApiError ? err : new ApiError(0, 'client', String(err)));
      })
      .finally(() => {
        if (gen === generation.current) setLoading(false);
      });
  };

  useEffect(() => {
    generation.current += 1;
    setRows([]);
    setCursor(null);
    load(JSON.parse(key) as ListQuery, null, false);
  }, [key]);

  return {
    rows,
    loading,
    error,
    hasMore: cursor !== null,
    more: () => {
      if (cursor !== null) load(JSON.parse(key) as ListQuery, cursor, true);
    },
  };
}

/** The search text, handed on once the user paused typing. */
function useDebounced(text: string, delayMs: number): string {
  const [value, setValue] = useState(text);
  useEffect(() => {
    const timer = setTimeout(() => setValue(text), delayMs);
    return () => clearTimeout(timer);
  }, [text, delayMs]);
  return value;
}

function SortHeader({ label, column, sort, onSort, className = 'left' }: { label: string; column: string; sort: SortState; onSort: (s: SortState) => void; className?: string }) {
  const { mark, aria } = sortMark(sort, column);
  return (
    <th className={className || undefined} aria-sort={aria}>
      <button type="button" className="btn btn-link btn-sm basil-sort" data-testid={`sort-${column}`} onClick={() => onSort(nextSort(sort, column))}>
        {label}
        {mark}
      </button>
    </th>
  );
}

function ListFrame<T>({
  kind,
  search,
  onSearch,
  paged,
  head,
  row,
  empty,
}: {
  kind: 'vm' | 'datastore';
  search: string;
  onSearch: (text: string) => void;
  paged: Paged<T>;
  head: ReactNode;
  row: (item: T) => ReactNode;
  empty: string;
}) {
  return (
    <div data-testid={`${kind}-list`}>
      <div className="basil-list-tools">
        <input
          className="clr-input basil-search"
          type="search"
          value={search}
          placeholder="Filter by name"
          aria-label={`filter ${kind}s by name`}
          data-testid={`${kind}-search`}
          onChange={(e) => onSearch(e.target.value)}
        />
        {paged.loading && <Spinner />}
      </div>
      <ErrorAlert error={paged.error} />
      {!paged.loading && paged.rows.length === 0 && !paged.error ? (
        <p className="basil-muted" data-testid={`${kind}-list-empty`}>
          {empty}
        </p>
      ) : (
        <table className="table table-compact basil-table" data-testid={`${kind}-table`}>
          <thead>{head}</thead>
          <tbody>{paged.rows.map(row)}</tbody>
        </table>
      )}
      {paged.hasMore && (
        <button type="button" className="btn btn-sm btn-outline" disabled={paged.loading} data-testid="list-more" onClick={paged.more}>
          More
        </button>
      )}
    </div>
  );
}

export function VmList() {
  const { api } = useApp();
  const [search, setSearch] = useState('');
  const [sort, setSort] = useState<SortState>({ key: 'name', desc: false });
  const q = useDebounced(search.trim(), SEARCH_DELAY_MS);
  const paged = usePaged<VmItem>((query) => api.vms(query), { q, sort: sortParam(sort), limit: PAGE_SIZE });
  return (
    <Section title="Virtual machines">
      <ListFrame
        kind="vm"
        search={search}
        onSearch={setSearch}
        paged={paged}
        empty={q ? `No VM's name contains “${q}”.` : 'Basil sees no VMs on the datastores of its vCenters yet.'}
        head={
          <tr>
            <SortHeader label="VM" column="name" sort={sort} onSort={setSort} />
            <th className="left">Pod</th>
            <th className="left">Datastores</th>
            <SortHeader label="Disks" column="disks" sort={sort} onSort={setSort} className="" />
            <SortHeader label="Size" column="size_gb" sort={sort} onSort={setSort} className="" />
            <SortHeader label="IOPS" column="iops" sort={sort} onSort={setSort} className="" />
            <SortHeader label="Latency" column="latency_ms" sort={sort} onSort={setSort} className="" />
          </tr>
        }
        row={(vm) => (
          <tr key={vm.id} data-vm={vm.id}>
            <td className="left">
              <VmLink id={vm.id} name={vm.name} />
            </td>
            <td className="left">{vm.pod ?? <span className="basil-muted">none</span>}</td>
            <td className="left">
              {vm.datastores.map((d, i) => (
                <span key={d.id}>
                  {i > 0 && ', '}
                  <ObjectLink hash={datastoreHash(d.id)} testId="datastore-link">
                    {d.name}
                  </ObjectLink>
                </span>
              ))}
            </td>
            <td>{vm.disks}</td>
            <td>{gb(vm.size_gb)}</td>
            <td>{iops(vm.iops)}</td>
            <td>{ms(vm.latency_ms)}</td>
          </tr>
        )}
      />
    </Section>
  );
}

export function DatastoreList() {
  const { api } = useApp();
  const [search, setSearch] = useState('');
  const [sort, setSort] = useState<SortState>({ key: 'name', desc: false });
  const q = useDebounced(search.trim(), SEARCH_DELAY_MS);
  const paged = usePaged<DatastoreItem>((query) => api.datastores(query), { q, sort: sortParam(sort), limit: PAGE_SIZE });
  return (
    <Section title="Datastores">
      <ListFrame
        kind="datastore"
        search={search}
        onSearch={setSearch}
        paged={paged}
        empty={q ? `No datastore's name contains “${q}”.` : 'Basil sees no datastores yet.'}
        head={
          <tr>
            <SortHeader label="Datastore" column="name" sort={sort} onSort={setSort} />
            <th className="left">Pod</th>
            <th className="left">vCenter</th>
            <SortHeader label="Free" column="free_gb" sort={sort} onSort={setSort} className="" />
            <SortHeader label="Latency" column="latency_ms" sort={sort} onSort={setSort} className="" />
            <SortHeader label="IOPS" column="iops" sort={sort} onSort={setSort} className="" />
            <SortHeader label="N now" column="normalized_load" sort={sort} onSort={setSort} className="" />
            <SortHeader label="P" column="P" sort={sort} onSort={setSort} className="" />
          </tr>
        }
        row={(d) => (
          <tr key={d.id} data-datastore={d.id}>
            <td className="left">
              <ObjectLink hash={datastoreHash(d.id)} testId="datastore-link">
                {d.name}
              </ObjectLink>
            </td>
            <td className="left">
              {d.pod ? (
                <ObjectLink hash={`#/pod/${encodeURIComponent(d.pod)}`} testId="pod-link">
                  {d.pod}
                </ObjectLink>
              ) : (
                <span className="basil-muted">none</span>
              )}
            </td>
            <td className="left">{d.vcenter ?? ''}</td>
            <td>{d.capacity_gb != null ? `${gb(d.free_gb)} of ${gb(d.capacity_gb)}` : gb(d.free_gb)}</td>
            <td>{ms(d.latency_ms)}</td>
            <td>{iops(d.iops)}</td>
            <td>{compact(d.normalized_load)}</td>
            <td>{compact(d.P)}</td>
          </tr>
        )}
      />
    </Section>
  );
}
