// The OpenAPI 3.1 document, generated from the same Zod schemas that validate requests.
import { z } from 'zod';

export type RouteDoc = {
  method: 'get' | 'post' | 'patch' | 'delete' | 'put';
  path: string;
  summary: string;
  tags: string[];
  body?: z.ZodType;
  params?: Record<string, string>;
  responses: Record<number, { description: string; schema?: z.ZodType; contentType?: string }>;
};

export type OpenApiRegistry = { add(doc: RouteDoc): void; document(): Record<string, unknown> };

const jsonSchema = (s: z.ZodType) => z.toJSONSchema(s, { target: 'draft-2020-12', io: 'input', unrepresentable: 'any' });

export function createOpenApiRegistry(): OpenApiRegistry {
  const routes: RouteDoc[] = [];
  return {
    add: (doc) => void routes.push(doc),
    document() {
      const paths: Record<string, Record<string, unknown>> = {};
      for (const r of routes) {
        const path = r.path.replace(/:(\w+)/g, '{$1}');
        paths[path] ??= {};
        paths[path][r.method] = {
          summary: r.summary,
          tags: r.tags,
          security: [{ bearer: [] }],
          parameters: Object.entries(r.params ?? {}).map(([name, description]) => ({
            name,
            in: 'path',
            required: true,
            description,
            schema: { type: 'string' },
          })),
          ...(r.body ? { requestBody: { required: true, content: { 'application/json': { schema: jsonSchema(r.body) } } } } : {}),
          responses: Object.fromEntries(
            Object.entries(r.responses).map(([code, res]) => [
              code,
              {
                description: res.description,
                ...(res.schema ? { content: { [res.contentType ?? 'application/json']: { schema: jsonSchema(res.schema) } } } : {}),
              },
            ]),
          ),
        };
      }
      return {
        openapi: '3.1.0',
        info: { title: 'cohort', version: '1', description: 'Interns, workspaces, presets, provider credentials and model requests.' },
        servers: [{ url: '/api/v1' }],
        components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
        paths,
      };
    },
  };
}
