// The list pages' state without React: the sort a header click asks for, and pages appended as the
// user asks for more.

import type { ListPage } from '../api/types';

export interface SortState {
  key: string;
  desc: boolean;
}

/** The `sort` parameter of the list endpoints: `name`, or `-name` for descending. */
export function sortParam(sort: SortState): string {
  return `${sort.desc ? '-' : ''}${sort.key}`;
}

/** A click on a column header: the same column flips its direction, another starts ascending. */
export function nextSort(current: SortState, key: string): SortState {
  return current.key === key ? { key, desc: !current.desc } : { key, desc: false };
}

/** The arrow a sorted column header shows, and its aria-sort. */
export function sortMark(current: SortState, key: string): { mark: string; aria: 'ascending' | 'descending' | 'none' } {
  if (current.key !== key) return { mark: '', aria: 'none' };
  return current.desc ? { mark: ' ▼', aria: 'descending' } : { mark: ' ▲', aria: 'ascending' };
}

/** The rows shown after another page arrived: the earlier ones, then the new ones not already shown. */
export function appendPage<T extends { id: string }>(shown: T[], page: ListPage<T>): T[] {
  const ids = new Set(shown.map((x) => x.id));
  return [...shown, ...page.items.filter((x) => !ids.has(x.id))];
}
