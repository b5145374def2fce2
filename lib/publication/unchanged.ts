/**
 * The one "unchanged → write nothing" rule of every published object (hourly feed files, GBFS
 * snapshots, monthly reports): a new version is written unless the index row already names the same
 * content (sha256) at the same key and the store still holds that object. The store check matters
 * when an object was deleted behind the index's back (by hand, or a store switch): it is written
 * again instead of being reported unchanged for ever.
 */
import type { ObjectStore } from '../store/types.js';

export interface IndexedObject {
  sha256: string | null;
  object_key: string | null;
}

export async function unchangedObject(store: ObjectStore, prev: IndexedObject | undefined, next: { sha256: string; key: string }): Promise<boolean> {
  if (!prev || prev.sha256 !== next.sha256 || prev.object_key !== next.key) return false;
  return (await store.head(next.key)) !== undefined;
}
