/**
 * An OpenAPI 3.1 `paths` object from an endpoint table (api/kit/endpoints.ts): the operations are
 * the rows the family's router serves, with the same parameter and body schemas it checks requests
 * against and the same response schemas its tests check answers against. A family supplies how its
 * auth kinds are documented and how its errors are rendered in the document.
 */
import type { EndpointDeclaration, ParamSpec, ResponseSpec } from '../kit/endpoints.js';
import { IDEMPOTENCY_KEY_HEADER, KEEP_HOURS, MAX_KEY_LENGTH, REPLAYED_HEADER } from '../kit/idempotency.js';
import type { Header, MediaType, Operation, Parameter, PathItem, Ref, Response, Schema, SecurityRequirement } from './common.js';

export interface DocFamily<Code extends string, Auth extends string> {
  security(auth: Auth): SecurityRequirement[];
  /** every error response of the endpoint by status: its own codes and those of the kit (auth, body) */
  errors(e: EndpointDeclaration<Code, Auth>): Record<string, Response | Ref>;
  /** a code schema in the document, named components by $ref (a plain function: the builder passes it on) */
  schema: (s: object) => Schema;
  /** parameters the family adds to a row's (conditional request headers of a file) */
  parameters?(e: EndpointDeclaration<Code, Auth>): Parameter[];
  /**
   * headers every answer of the row with this status carries besides its own (the rate-limit
   * headers of an API-key family, ./rate-limit.ts); added to each response the operation holds
   * inline, so a family's shared components ($ref) must carry them themselves
   */
  headers?(e: EndpointDeclaration<Code, Auth>, status: number): Record<string, Header> | undefined;
}

function parameter(name: string, where: 'path' | 'query' | 'header', p: ParamSpec, schema: (s: object) => Schema): Parameter {
  return {
    name,
    in: where,
    required: where === 'path' ? true : Boolean(p.required),
    description: p.description,
    schema: schema(p.schema),
    ...(p.example === undefined ? {} : { example: p.example }),
  };
}

/** A body of the row's schema; without one, bytes of the media type (OpenAPI 3.1's binary content: no `type`, its length is no JSON Schema's). */
function content(mediaType: string, body: object | undefined, schema: (s: object) => Schema, example?: unknown): Record<string, MediaType> {
  return { [mediaType]: { schema: body ? schema(body) : { contentMediaType: mediaType }, ...(example === undefined ? {} : { example }) } };
}

function response(r: ResponseSpec, schema: (s: object) => Schema): Response {
  const headers =
    r.headers &&
    Object.fromEntries(
      Object.entries(r.headers).map(([n, h]) => [
        n,
        { description: h.description, schema: h.schema ?? { type: 'string' }, ...(h.required ? { required: true } : {}) },
      ]),
    );
  const body = r.content
    ? Object.fromEntries(Object.entries(r.content).map(([type, s]) => [type, { schema: schema(s) }]))
    : r.schema !== undefined || r.mediaType !== undefined
      ? content(r.mediaType ?? 'application/json', r.schema, schema)
      : undefined;
  return { description: r.description, ...(headers ? { headers } : {}), ...(body ? { content: body } : {}) };
}

/** The request header of an `idempotent` row (api/kit/idempotency.ts has the rules). */
const IDEMPOTENCY_PARAMETER: Parameter = {
  name: IDEMPOTENCY_KEY_HEADER,
  in: 'header',
  required: false,
  description: [
    `A key of your choice, unique per request you mean (a UUID v4 is a good one), sent again with every retry of that request (draft-ietf-httpapi-idempotency-key-header). For ${KEEP_HOURS} hours a retry with the same key and the same request gets the first answer back (same status and body, with \`${REPLAYED_HEADER}: true\`) instead of executing again.`,
    'The same key with another request is 422; while the first request is still in progress, 409 with `Retry-After`. An answer of 5xx or 429 is not kept: the retry executes. Keys are per client: another client’s key never collides. Without the header nothing changes.',
    `The draft's structured-field string (\`"…"\`) or the bare value: 1 to ${MAX_KEY_LENGTH} visible ASCII characters.`,
  ].join(' '),
  schema: { type: 'string', minLength: 1, maxLength: MAX_KEY_LENGTH + 2 },
  example: '"8e03978e-40d5-43e8-bc93-6894a57f9324"',
};

/** The answer header of a replay. */
const REPLAYED: Header = {
  description: `\`true\` on the answer to a retry with the ${IDEMPOTENCY_KEY_HEADER} of an earlier request: this is that request's answer, replayed`,
  schema: { type: 'string', const: 'true' },
};

function operationOf<Code extends string, Auth extends string>(e: EndpointDeclaration<Code, Auth>, family: DocFamily<Code, Auth>): Operation {
  const parameters = [
    ...Object.entries(e.params ?? {}).map(([n, p]) => parameter(n, 'path', p, family.schema)),
    ...Object.entries(e.query ?? {}).map(([n, p]) => parameter(n, 'query', p, family.schema)),
    ...Object.entries(e.headers ?? {}).map(([n, p]) => parameter(n, 'header', p, family.schema)),
    ...(family.parameters?.(e) ?? []),
    ...(e.idempotent ? [IDEMPOTENCY_PARAMETER] : []),
  ];
  const success = Object.fromEntries(
    Object.entries(e.responses).map(([status, r]) => {
      const res = response(r, family.schema);
      return [status, e.idempotent ? { ...res, headers: { ...res.headers, [REPLAYED_HEADER]: REPLAYED } } : res];
    }),
  );
  const responses: Record<string, Response | Ref> = { ...success, ...family.errors(e) };
  for (const [status, r] of Object.entries(responses)) {
    const extra = '$ref' in r ? undefined : family.headers?.(e, Number(status));
    if (extra) responses[status] = { ...r, headers: { ...(r as Response).headers, ...extra } };
  }
  return {
    operationId: e.operationId,
    summary: e.summary,
    ...(e.description ? { description: e.description } : {}),
    tags: [e.tag],
    ...(e.deprecated ? { deprecated: true } : {}),
    ...(parameters.length ? { parameters } : {}),
    ...(e.body
      ? {
          requestBody: {
            required: e.body.required,
            ...(e.body.description ? { description: e.body.description } : {}),
            content: content(e.body.mediaType ?? 'application/json', e.body.schema, family.schema, e.body.example),
          },
        }
      : {}),
    responses,
    security: family.security(e.auth),
  };
}

/** The `paths` of a document: one path item per template, one operation per row. */
export function pathsOf<Code extends string, Auth extends string>(
  endpoints: ReadonlyArray<EndpointDeclaration<Code, Auth>>,
  family: DocFamily<Code, Auth>,
): Record<string, PathItem> {
  const paths: Record<string, PathItem> = {};
  for (const e of endpoints) {
    const item = (paths[e.path] ??= {});
    if (item[e.method]) throw new Error(`endpoint table: ${e.method.toUpperCase()} ${e.path} declared twice`);
    item[e.method] = operationOf(e, family);
  }
  return paths;
}
