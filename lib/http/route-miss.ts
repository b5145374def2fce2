/**
 * The one 404/405 decision of every API family: a path that no route has is 404; a path whose routes
 * take other methods is 405 with `Allow` naming them (RFC 9110 §15.5.6). `layers` are the route
 * layers that matched the path (koa-router's `ctx.matched`, or `router.match(path).path`); each
 * family supplies its own error objects, so the body stays in its format.
 */
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
