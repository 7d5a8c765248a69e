// The terminal client's conversation pieces: a permission request as a numbered choice of the
// offered options, a question as one prompt per field (typed), and refusals in words.
import { z } from 'zod';
import { type FieldDescriptor, Interaction } from '../shared/daemon-protocol.ts';
import { parseJson } from '../shared/parse.ts';

export type Asker = (question: string) => Promise<string | null>;

const OPTION_WORDS: Record<string, string> = {
  allow_once: 'allow once',
  allow_always: 'always allow',
  reject_once: 'reject once',
  reject_always: 'always reject',
  cancel: 'cancel the run',
};

async function choose(options: string[], ask: Asker, out: (s: string) => void): Promise<string | null> {
  for (const [i, o] of options.entries()) out(`  ${i + 1}) ${OPTION_WORDS[o] ?? o}\n`);
  for (;;) {
    const line = await ask('choose> ');
    if (line === null) return null;
    const t = line.trim();
    const n = Number(t);
    if (Number.isInteger(n) && n >= 1 && n <= options.length) return options[n - 1]!;
    if (options.includes(t)) return t;
    out(`please answer 1 to ${options.length}\n`);
  }
}

function convert(f: FieldDescriptor, raw: string): unknown {
  if (f.type === 'number' || f.type === 'integer') return Number(raw);
  if (f.type === 'boolean') return /^(y|yes|true|1)$/i.test(raw);
  if (f.type === 'array')
    return raw
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
  return raw;
}

/** The interaction a tool call's arguments carry; an older daemon's permission lacks cohort's
 * extension (title, input, sandbox). */
const Asked = z.discriminatedUnion('kind', [
  Interaction.options[0].partial({ title: true, input: true, sandbox: true }),
  Interaction.options[1],
]);
type Permission = Extract<z.infer<typeof Asked>, { kind: 'permission' }>;

const WHERE = {
  inner: "inside the intern's sandbox (no network, writes only in its work directory)",
  escalated: "OUTSIDE the sandbox, with everything the intern's machine may do",
};

/** What the permission would let run, as cohort's extension of the interaction says it (docs/isolation.md;
 * absent from an older daemon's). */
export function whatWillRun(it: Permission): string {
  const lines: string[] = [];
  const command = it.input?.command;
  if (typeof command === 'string') lines.push(`  command: ${command}`);
  else if (it.title) lines.push(`  ${it.title}`);
  if (it.input && typeof command !== 'string') lines.push(`  input: ${JSON.stringify(it.input)}`);
  if (it.sandbox) lines.push(`  runs ${WHERE[it.sandbox]}`);
  return lines.map((l) => `${l}\n`).join('');
}

/** Returns the `tool` message content for the interaction, or null when input ended. */
export async function askAnswer(args: string, ask: Asker, out: (s: string) => void): Promise<string | null> {
  const it = parseJson(Asked, args, "the intern's question");
  if (it.kind === 'permission') {
    out(`The intern asks permission${it.operation ? ` to use ${it.operation}` : ''}:\n${whatWillRun(it)}`);
    return choose([...it.options, 'cancel'], ask, out);
  }
  out(`The intern asks: ${it.message}\n(type :decline or :cancel to refuse)\n`);
  const content: Record<string, unknown> = {};
  for (const f of it.fields) {
    const hint = [
      f.type,
      f.required ? 'required' : 'optional',
      f.options.length ? `one of ${f.options.join(', ')}` : '',
    ]
      .filter(Boolean)
      .join(', ');
    for (;;) {
      const line = await ask(`${f.name} (${hint})> `);
      if (line === null) return null;
      const t = line.trim();
      if (t === ':decline' || t === ':cancel') return JSON.stringify({ action: t.slice(1) });
      if (!t && !f.required) break;
      if (!t) {
        out('an answer is required\n');
        continue;
      }
      if (f.options.length && !f.options.includes(t)) {
        out(`please answer one of: ${f.options.join(', ')}\n`);
        continue;
      }
      content[f.name] = convert(f, t);
      break;
    }
  }
  return JSON.stringify({ action: 'accept', content });
}

const WORDS: Record<string, string> = {
  bad_request: 'the request was not accepted',
  busy: 'the intern is busy with another turn',
  intern_not_ready: 'the intern is not running',
  intern_unreachable: 'the intern could not be reached',
  rate_limited: 'too many turns; slow down',
  timeout: 'the intern took too long',
  turn_failed: 'the intern could not run the turn',
  run_ended: 'the run was ended',
  stream_severed: 'the connection to the intern was lost',
  not_found: 'no such intern',
  interaction_unknown: 'that question is not pending',
  interaction_not_pending: 'that question is no longer waiting',
};

export function describeError(
  status: number,
  body: { error?: { message?: string; metadata?: { reason?: string; retryable?: boolean } } } | null | undefined,
  retryAfter: string | null,
): string {
  const e = body?.error;
  if (status === 401) return 'error: the API key was not accepted (401)';
  if (!e) return `error: the service answered ${status}`;
  const reason = e.metadata?.reason;
  const words = (reason && WORDS[reason]) || 'request failed';
  const retry = e.metadata?.retryable ? ` — you can retry${retryAfter ? ` in ${retryAfter}s` : ''}` : '';
  return `error: ${words}: ${e.message} (${status}${reason ? ` ${reason}` : ''})${retry}`;
}
