/**
 * The one 404/405 decision of every API family: a path that no route has is 404; a path whose routes
 * take other methods is 405 with `Allow` naming them (RFC 9110 §15.5.6). `layers` are the route
 * layers that matched the path (koa-router's `ctx.matched`, or `router.match(path).path`); each
 * family supplies its own error objects, so the body stays in its format. Which family answers a
 * request that no route takes is decided here too: the one whose prefix owns its path (ownerOf).
 */
import type Koa from 'koa';
import type Router from '@koa/router';

type Layer = { methods: readonly string[] };

/** The methods of the matched routes, as an Allow value; '' when none matched. */
export function allowOf(layers: readonly Layer[] | undefined): string {
  const allowed = new Set<string>();
  for (const layer of layers ?? []) for (const m of layer.methods) allowed.add(m);
  return [...allowed].join(', ');
}

export function routeMiss(layers: readonly Layer[] | undefined, errors: { notFound: () => Error; notAllowed: (allow: string) => Error }): never {
  const allow = allowOf(layers);
  throw allow ? errors.notAllowed(allow) : errors.notFound();
}

/**
 * A family as a host's root router nests it (api/app.ts): its routes (`router.routes()`), the path
 * prefixes it owns and its answer to a request there that none of its routes takes. A family without
 * prefixes (ops, docs, public pages) owns only its routes; a miss outside every prefix is Koa's 404.
 */
export interface RouteFamily {
  name: string;
  routes: Koa.Middleware;
  /** segment-wise: `/edge/tomp` owns `/edge/tomp` and `/edge/tomp/…`, not `/edge/tompx`; `/` owns every path */
  prefixes: readonly string[];
  /** answers a request under its prefixes that no route of the host takes: 404, or 405 with Allow (routeMiss) */
  miss?: Koa.Middleware;
}

/** The router behind a family's `routes` (koa-router's dispatch middleware carries it). */
export function routerOf(family: RouteFamily): Router {
  const router = (family.routes as { router?: Router }).router;
  if (!router) throw new Error(`${family.name}: its routes are not a router's routes()`);
  return router;
}

/** A prefix without its trailing slashes: `/gbfs/v2/` and `/gbfs/v2` are one prefix, `/` owns every path. */
const bare = (prefix: string): string => prefix.replace(/\/+$/, '');

/** `prefix` owns `path` segment-wise (see RouteFamily). */
function owns(prefix: string, path: string): boolean {
  const p = bare(prefix);
  return p === '' || path === p || path.startsWith(`${p}/`);
}

/** The family whose longest prefix owns `path`: the one that answers a miss there, whatever the order of `families`. */
export function ownerOf<F extends Pick<RouteFamily, 'prefixes'>>(families: readonly F[], path: string): F | undefined {
  let best: F | undefined;
  let length = -1;
  for (const f of families) {
    for (const p of f.prefixes) {
      if (owns(p, path) && bare(p).length > length) {
        best = f;
        length = bare(p).length;
      }
    }
  }
  return best;
}

/** A route pattern up to its first parameter, wildcard or regular-expression part: every path it matches begins so. */
const staticHead = (path: string): string => path.slice(0, path.search(/[:*{(\\?]|$/));

/**
 * Refuses (throws) families of which one could answer a path that another owns: two that claim one
 * prefix, or a route (or a family middleware) that lies outside its family's prefixes, inside
 * another's, or whose parameters could reach into another's. Then a request matches the routes of
 * one family at most, and which family answers never depends on the order they are nested in.
 */
export function assertDisjoint(families: readonly RouteFamily[]): void {
  const claimed = new Map<string, string>();
  for (const f of families) {
    for (const p of f.prefixes) {
      const other = claimed.get(bare(p));
      if (other) throw new Error(`${f.name} and ${other} both claim the prefix ${p}`);
      claimed.set(bare(p), f.name);
    }
  }
  for (const f of families) {
    const own = f.prefixes.length ? f : undefined;
    for (const layer of routerOf(f).stack) {
      const where = `${f.name}: ${layer.methods.join(',') || 'middleware'} ${String(layer.path)}`;
      if (typeof layer.path !== 'string') throw new Error(`${where}: a regular-expression route cannot be checked against the other families`);
      const head = staticHead(layer.path);
      // a middleware layer matches below its path too; a route without parameters matches only itself
      const exact = head === layer.path && layer.methods.length > 0;
      if (ownerOf(families, head) !== own) throw new Error(`${where} lies outside the paths its family owns`);
      if (exact) continue;
      for (const g of families) {
        if (g === f) continue;
        const reach = g.prefixes.find((p) => bare(p).startsWith(head));
        if (reach !== undefined) throw new Error(`${where} could match paths under ${reach}, which ${g.name} owns`);
      }
    }
  }
}
