// An intern's sessions and their transcripts over the API (docs/guides/sessions.md).
import { z } from 'zod';
import { ApprovalMode, Interaction, SessionId, Usage } from '../../shared/daemon-protocol.ts';
import { Timestamp } from '../http/common.schemas.ts';

export const SessionState = z
  .enum(['completed', 'paused', 'failed', 'cancelled'])
  .describe("how the session's latest request ended: paused means a question waits for its answer");

export const InternSession = z.object({
  id: SessionId,
  intern_id: z.string(),
  /** The session's first message, up to 120 characters. */
  title: z.string(),
  state: SessionState,
  /** How many transcript entries it holds. */
  entries: z.number().int(),
  created_at: Timestamp,
  updated_at: Timestamp,
});
export type InternSession = z.infer<typeof InternSession>;

export const ListSessionsQuery = z.strictObject({
  limit: z.coerce.number().int().min(1).max(100).default(20),
  starting_after: z.string().min(1).max(1024).optional().describe('next_cursor of the previous page'),
});
export type ListSessionsQuery = z.infer<typeof ListSessionsQuery>;

export const SessionList = z.object({
  data: z.array(InternSession),
  has_more: z.boolean(),
  next_cursor: z.string().optional(),
});

export const TranscriptQuery = z.strictObject({
  limit: z.coerce.number().int().min(1).max(500).default(100),
  before: z.coerce
    .number()
    .int()
    .min(1)
    .optional()
    .describe('next_cursor of the previous page: entries before this seq'),
});
export type TranscriptQuery = z.infer<typeof TranscriptQuery>;

const ToolSummary = z.object({
  id: z.string(),
  title: z.string().nullable(),
  kind: z.string().nullable(),
  status: z.enum(['pending', 'in_progress', 'completed', 'failed']).nullable(),
  input: z.string().nullable().describe('its head, at most 2,000 characters'),
  output: z.string().nullable().describe('its tail, at most 2,000 characters'),
});

const base = { seq: z.number().int(), at: Timestamp };
const text = { content: z.string(), truncated: z.boolean() };

export const TranscriptEntry = z.discriminatedUnion('type', [
  z.object({
    ...base,
    type: z.literal('user'),
    ...text,
    approval_mode: ApprovalMode.nullable().describe('the mode its run started with; null for a steering message'),
    steered: z.boolean(),
  }),
  z.object({ ...base, type: z.literal('answer'), interaction_id: z.string(), ...text }),
  z.object({ ...base, type: z.literal('assistant'), ...text }),
  z.object({ ...base, type: z.literal('reasoning'), ...text }),
  z.object({ ...base, type: z.literal('tool'), tool: ToolSummary }),
  z.object({ ...base, type: z.literal('interaction'), interaction_id: z.string(), interaction: Interaction }),
  z.object({
    ...base,
    type: z.literal('error'),
    error: z.object({ code: z.number().int(), reason: z.string(), message: z.string() }),
  }),
  z.object({
    ...base,
    type: z.literal('end'),
    finish_reason: z.enum(['stop', 'tool_calls', 'error']).nullable(),
    model: z.string().nullable(),
    usage: Usage.nullable(),
    omitted: z.number().int(),
  }),
]);
export type TranscriptEntry = z.infer<typeof TranscriptEntry>;

export const Transcript = z.object({
  session: InternSession,
  data: z.array(TranscriptEntry).describe('oldest first: the latest page comes first, earlier ones by next_cursor'),
  has_more: z.boolean().describe('earlier entries exist'),
  next_cursor: z.number().int().optional().describe('pass as before= for the entries before these'),
});
