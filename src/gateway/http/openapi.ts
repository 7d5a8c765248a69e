// The OpenAPI 3.1 document, generated from the route definitions (./route.ts): the same Zod
// schemas that validate path parameters, queries, headers and bodies describe them here.
import { z } from 'zod';

export type Responses = Record<number, { description: string; schema?: z.ZodType; contentType?: string }>;

export type RouteDoc = {
  method: 'get' | 'post' | 'patch' | 'delete' | 'put';
  path: string;
  summary: string;
  tags: string[];
  /** False for a route that takes no key. */
  secured: boolean;
  /** Served at the root (operators' routes), not under /api/v1. */
  root?: boolean;
  params?: z.ZodObject;
  query?: z.ZodObject;
  headers?: z.ZodObject;
  body?: z.ZodType;
  /** The body's media type where it is not JSON (a file's raw bytes). */
  bodyType?: string;
  responses: Responses;
};

export type OpenApiRegistry = {
  add(doc: RouteDoc): void;
  /** Called for every route the server registers (its onRoute hook), documented or not. */
  registered(route: { method: string | string[]; url: string }): void;
  /** Registered routes without an operation in the document, as `METHOD url`. */
  undocumented(): string[];
  document(): Record<string, unknown>;
};

const jsonSchema = (s: z.ZodType) =>
  z.toJSONSchema(s, { target: 'draft-2020-12', io: 'input', unrepresentable: 'any' });
export const capitalized = (key: string) =>
  key.replace(/(^|-)([a-z])/g, (_m, dash: string, c: string) => dash + c.toUpperCase());

/** One OpenAPI parameter per field of a params, query or headers schema. */
function parameters(where: 'path' | 'query' | 'header', shape: z.ZodObject | undefined) {
  return Object.entries(shape?.shape ?? {}).map(([key, field]) => {
    const f = field as z.ZodType;
    return {
      // A wildcard's rest of the path (`/files/*`) is documented as `{path}`.
      name: where === 'header' ? capitalized(key) : key === '*' ? 'path' : key,
      in: where,
      required: where === 'path' || !f.safeParse(undefined).success,
      ...(f.description ? { description: f.description } : {}),
      schema: jsonSchema(f),
    };
  });
}

export function createOpenApiRegistry(): OpenApiRegistry {
  const routes: RouteDoc[] = [];
  const seen: string[] = [];
  const key = (method: string, url: string) => `${method.toUpperCase()} ${url}`;
  return {
    add: (doc) => void routes.push(doc),
    registered: (r) => {
      for (const m of [r.method].flat()) if (m !== 'HEAD') seen.push(key(m, r.url));
    },
    undocumented: () => {
      const documented = new Set(routes.map((r) => key(r.method, r.root ? r.path : `/api/v1${r.path}`)));
      return seen.filter((k) => !documented.has(k));
    },
    document() {
      const paths: Record<string, Record<string, unknown>> = {};
      for (const r of routes) {
        const path = r.path.replace(/:(\w+)/g, '{$1}').replace(/\/\*$/, '/{path}');
        paths[path] ??= r.root ? { servers: [{ url: '/' }] } : {};
        paths[path][r.method] = {
          summary: r.summary,
          tags: r.tags,
          security: r.secured ? [{ bearer: [] }] : [],
          parameters: [
            ...parameters('path', r.params),
            ...parameters('query', r.query),
            ...parameters('header', r.headers),
          ],
          ...(r.body
            ? {
                requestBody: {
                  required: !r.body.safeParse(undefined).success,
                  content: { [r.bodyType ?? 'application/json']: { schema: jsonSchema(r.body) } },
                },
              }
            : {}),
          responses: Object.fromEntries(
            Object.entries(r.responses).map(([code, res]) => [
              code,
              {
                description: res.description,
                ...(res.schema
                  ? { content: { [res.contentType ?? 'application/json']: { schema: jsonSchema(res.schema) } } }
                  : {}),
              },
            ]),
          ),
        };
      }
      return {
        openapi: '3.1.0',
        info: {
          title: 'cohort',
          version: '1',
          description: 'Interns, workspaces, presets, provider credentials and model requests.',
        },
        servers: [{ url: '/api/v1' }],
        components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
        paths,
      };
    },
  };
}

/** The refusals a route documents, each in the route's error shape. */
export const refusals = (schema: z.ZodType, ...codes: number[]): Responses =>
  Object.fromEntries(codes.map((c) => [c, { description: 'error', schema }]));
