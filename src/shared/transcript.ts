// A session transcript's entries as the gateway keeps them and its API shows them
// (docs/guides/sessions.md): one type for the gateway that writes them and the console that reads
// them. May import: ./daemon-protocol.ts (types only).
import type { ApprovalMode, Interaction, ToolActivity, Usage } from './daemon-protocol.ts';

/** A tool call's latest state, as the chat stream's `cohort_tool` carries it (bounded when kept). */
export type ToolSummary = ToolActivity;

/** An entry as stored (its `kind` column and its `body`), and as the API shows it with seq and at. */
export type EntryBody =
  | {
      type: 'user';
      content: string;
      /** The mode the prompt's run was started with; null for a steering message. */
      approval_mode: ApprovalMode | null;
      steered: boolean;
      truncated: boolean;
    }
  | { type: 'answer'; interaction_id: string; content: string; truncated: boolean }
  | { type: 'assistant'; content: string; truncated: boolean }
  | { type: 'reasoning'; content: string; truncated: boolean }
  | { type: 'tool'; tool: ToolSummary }
  | { type: 'interaction'; interaction_id: string; interaction: Interaction }
  | { type: 'error'; error: { code: number; reason: string; message: string } }
  | {
      type: 'end';
      /** `stop`, `tool_calls` (paused), `error`, or null when the caller left (which cancels the run). */
      finish_reason: 'stop' | 'tool_calls' | 'error' | null;
      model: string | null;
      usage: Usage | null;
      /** Entries this request did not keep (over MAX_ENTRIES). */
      omitted: number;
    };
