// Test helper: a long session written straight into the store as the gateway writes transcripts
// (src/gateway/interns/sessions.ts), for the console's long-history tests and bench.
import type { Db } from '../../src/gateway/store/db.ts';
import { recordTranscript } from '../../src/gateway/interns/sessions.ts';
import type { Entry } from '../../src/gateway/interns/transcript.ts';

export async function seedSession(
  db: Db,
  opts: { internId: string; sessionId: string; turns: { prompt: string; answer: string }[] },
): Promise<void> {
  const at = Date.now() - opts.turns.length * 1000;
  const entries: Entry[] = opts.turns.flatMap((t, i) => [
    {
      at: at + i * 1000,
      body: { type: 'user', content: t.prompt, approval_mode: 'self-drive', steered: false, truncated: false },
    },
    { at: at + i * 1000 + 1, body: { type: 'assistant', content: t.answer, truncated: false } },
    {
      at: at + i * 1000 + 2,
      body: {
        type: 'end',
        finish_reason: 'stop',
        model: 'local/scripted',
        usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 },
        omitted: 0,
      },
    },
  ]);
  await recordTranscript(db, { internId: opts.internId, sessionId: opts.sessionId, entries });
}
