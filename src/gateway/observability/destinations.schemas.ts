// Broadcast destination shapes (docs/guides/observability.md).
import { z } from 'zod';
import { Timestamp, Uuid } from '../http/common.schemas.ts';
import { StoredString } from '../http/stored.schemas.ts';
import { PROTOCOLS } from './exporter.ts';

export const MAX_HEADERS = 32;
/** Headers the exporter sets itself, or that HTTP gives a meaning of its own. */
const RESERVED_HEADERS = new Set([
  'content-type',
  'content-length',
  'host',
  'connection',
  'transfer-encoding',
  'te',
  'upgrade',
  'keep-alive',
  'expect',
]);

const Headers = z
  .record(
    z
      .string()
      .regex(/^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,128}$/, 'header names are 1 to 128 token characters')
      .refine(
        (k) => !RESERVED_HEADERS.has(k.toLowerCase()),
        'is set by the exporter or by HTTP and cannot be configured',
      ),
    z
      .string()
      .max(4096)
      .regex(/^[^\r\n\0]*$/, 'a header value is one line'),
  )
  .refine((h) => Object.keys(h).length <= MAX_HEADERS, `at most ${MAX_HEADERS} headers`);

export const CreateDestination = z.strictObject({
  workspace_id: Uuid.optional().describe("the workspace whose spans it receives; default: the account's default"),
  name: StoredString.max(255).nullable().optional(),
  kind: z
    .enum(['otlp', 'webhook'])
    .default('otlp')
    .describe('`otlp`: OpenTelemetry over OTLP/HTTP; `webhook` is not built yet (400)'),
  endpoint: z
    .string()
    .min(1)
    .max(2048)
    .describe('the URL spans are POSTed to, such as https://collector.example/v1/traces'),
  protocol: z.enum(PROTOCOLS).default('http/protobuf'),
  headers: Headers.optional().describe('sent with each export (an API key of the collector); write-only, shown masked'),
  disabled: z.boolean().default(false),
});
export type CreateDestination = z.infer<typeof CreateDestination>;

export const DestinationId = z.strictObject({ id: Uuid });
export const ListDestinationsQuery = z.strictObject({ workspace_id: Uuid.optional() });

export const BroadcastDestination = z.object({
  id: Uuid,
  name: z.string().nullable(),
  workspace_id: Uuid,
  kind: z.literal('otlp'),
  endpoint: z.string(),
  protocol: z.enum(PROTOCOLS),
  headers: z.record(z.string(), z.string()).describe('header names with their values masked'),
  disabled: z.boolean(),
  created_at: Timestamp,
});
export type BroadcastDestination = z.infer<typeof BroadcastDestination>;
