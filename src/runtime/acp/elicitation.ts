// Question fields (docs/reference/intern-chat.md#interactions: name, type, required, options) ⇄ ACP form elicitation
// schemas, and validation of an answer against a schema. Pure; used by the agent and the daemon.
import type { ElicitationPropertySchema, CreateElicitationRequest } from '@agentclientprotocol/sdk';

export type AskField = { name: string; type: string; required: boolean; options: string[] };
export type FormSchema = {
  type?: 'object';
  properties?: Record<string, ElicitationPropertySchema>;
  required?: string[] | null;
};
export type AnswerContent = Record<string, string | number | boolean | string[]>;

export function fieldsToSchema(fields: AskField[]): FormSchema {
  const properties: Record<string, ElicitationPropertySchema> = {};
  for (const f of fields) {
    const opts = f.options.length ? f.options : undefined;
    if (f.type === 'array')
      properties[f.name] = { type: 'array', title: f.name, items: { type: 'string', enum: f.options } };
    else if (f.type === 'number' || f.type === 'integer' || f.type === 'boolean')
      properties[f.name] = { type: f.type, title: f.name };
    else properties[f.name] = { type: 'string', title: f.name, ...(opts ? { enum: opts } : {}) };
  }
  return { type: 'object', properties, required: fields.filter((f) => f.required).map((f) => f.name) };
}

function optionsOf(p: ElicitationPropertySchema): string[] {
  const q = p as {
    enum?: unknown;
    oneOf?: { const?: unknown }[];
    items?: { enum?: unknown; anyOf?: { const?: unknown }[] };
  };
  const list = q.enum ?? q.oneOf?.map((o) => o.const) ?? q.items?.enum ?? q.items?.anyOf?.map((o) => o.const) ?? [];
  return Array.isArray(list) ? list.filter((v): v is string => typeof v === 'string') : [];
}

export function schemaToFields(schema: FormSchema): AskField[] {
  const required = new Set(schema.required ?? []);
  return Object.entries(schema.properties ?? {}).map(([name, p]) => ({
    name,
    type: p.type,
    required: required.has(name),
    options: optionsOf(p),
  }));
}

/** The form schema of an elicitation request, or null for URL-mode and unknown modes. */
export function formSchemaOf(req: CreateElicitationRequest): FormSchema | null {
  return req.mode === 'form' && 'requestedSchema' in req ? (req.requestedSchema as FormSchema) : null;
}

function valueFits(f: AskField, v: unknown): boolean {
  switch (f.type) {
    case 'string':
      return typeof v === 'string' && (!f.options.length || f.options.includes(v));
    case 'number':
      return typeof v === 'number' && Number.isFinite(v);
    case 'integer':
      return Number.isInteger(v);
    case 'boolean':
      return typeof v === 'boolean';
    case 'array':
      return Array.isArray(v) && v.every((x) => typeof x === 'string' && (!f.options.length || f.options.includes(x)));
    default:
      return typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean';
  }
}

/** Checks accepted content against the fields; returns the problem, or null when it fits. */
export function checkAnswer(fields: AskField[], content: Record<string, unknown>): string | null {
  for (const f of fields) {
    if (!(f.name in content)) {
      if (f.required) return `field ${f.name} is required`;
      continue;
    }
    if (!valueFits(f, content[f.name]))
      return `field ${f.name} must be ${f.type}${f.options.length ? ` among ${f.options.join(', ')}` : ''}`;
  }
  const unknown = Object.keys(content).find((k) => !fields.some((f) => f.name === k));
  return unknown ? `unknown field ${unknown}` : null;
}
