/** Counts object-store errors per operation (`store_errors_total`) without changing behaviour. */
import type { ObjectStore } from './types.js';
import { metrics } from '../metrics.js';

export function instrumentStore(store: ObjectStore): ObjectStore {
  const count = <T>(op: string, p: Promise<T>): Promise<T> =>
    p.catch((err) => {
      metrics.storeErrors.inc({ op });
      throw err;
    });
  return {
    put: (key, body, opts) => count('put', store.put(key, body, opts)),
    get: (key) => count('get', store.get(key)),
    head: (key) => count('head', store.head(key)),
    list: (prefix) => store.list(prefix),
    delete: (key) => count('delete', store.delete(key)),
    check: () => count('check', store.check()),
    close: () => store.close(),
  };
}
