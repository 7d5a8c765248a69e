// A paused run's request, answered in the transcript: a permission shows what would run and
// where, with the intern's options as buttons; a question is a form built from its fields.
import { useEffect, useRef, useState } from 'preact/hooks';
import type { PermissionArgs, QuestionArgs, QuestionField } from '../chat.ts';

const OPTION_LABELS: Record<string, string> = {
  allow_once: 'Allow once',
  allow_always: 'Always allow',
  reject_once: 'Reject',
  reject_always: 'Always reject',
};
export const optionLabel = (o: string) => OPTION_LABELS[o] ?? o;

const WHERE: Record<string, string> = {
  inner: 'In the inner sandbox: read-only system, writable work folder, no network.',
  escalated: 'Outside the inner sandbox, anywhere in the intern’s own runtime.',
};

/** The command when the request carries one (`input.command`), else the input as JSON. */
function shown(input: unknown): string | null {
  if (input === null || input === undefined) return null;
  if (typeof input === 'object' && typeof (input as { command?: unknown }).command === 'string')
    return (input as { command: string }).command;
  return JSON.stringify(input, null, 2);
}

export function Permission({
  args,
  answered,
  onAnswer,
}: {
  args: PermissionArgs;
  answered?: string;
  onAnswer?: (answer: string) => void;
}) {
  const command = shown(args.input);
  // Agents often name the command in the title too ("Run in the sandbox: ls"): it is shown once, below.
  const title =
    command && args.title?.endsWith(command) ? args.title.slice(0, -command.length).replace(/[:\s]+$/, '') : args.title;
  const first = useRef<HTMLDivElement>(null);
  useEffect(() => {
    if (onAnswer && !answered) first.current?.querySelector('button')?.focus();
  }, [!!onAnswer && !answered]);
  return (
    <fieldset class="interaction">
      <legend>Permission requested{args.operation ? `: ${args.operation}` : ''}</legend>
      {title && <p>{title}</p>}
      {command && <pre class="command">{command}</pre>}
      {args.sandbox && <p class="muted">{WHERE[args.sandbox] ?? `Runs: ${args.sandbox}`}</p>}
      {answered ? (
        <p class="answered">You answered: {answered}</p>
      ) : (
        onAnswer && (
          <div class="actions" ref={first}>
            {args.options.map((o) => (
              <button type="button" class={o.startsWith('reject') ? 'danger' : undefined} onClick={() => onAnswer(o)}>
                {optionLabel(o)}
              </button>
            ))}
            <button type="button" class="quiet" onClick={() => onAnswer('cancel')}>
              Cancel the turn
            </button>
          </div>
        )
      )}
    </fieldset>
  );
}

type Values = Record<string, string | boolean>;

function input(f: QuestionField, id: string, values: Values, set: (v: Values) => void) {
  const value = values[f.name];
  const label = f.title ?? f.name;
  const common = { id, name: f.name, required: f.required };
  if (f.type === 'boolean')
    return (
      <div class="field check">
        <input
          {...common}
          type="checkbox"
          required={false}
          checked={value === true}
          onChange={(e) => set({ ...values, [f.name]: e.currentTarget.checked })}
        />
        <label for={id}>{label}</label>
      </div>
    );
  return (
    <div class="field">
      <label for={id}>{label}</label>
      {f.required && (
        <span class="required" aria-hidden="true">
          *
        </span>
      )}
      {f.description && <p class="hint">{f.description}</p>}
      {f.options.length ? (
        <select
          {...common}
          value={String(value ?? '')}
          onChange={(e) => set({ ...values, [f.name]: e.currentTarget.value })}
        >
          <option value="">Choose…</option>
          {f.options.map((o) => (
            <option value={o}>{o}</option>
          ))}
        </select>
      ) : (
        <input
          {...common}
          type={f.type === 'number' || f.type === 'integer' ? 'number' : 'text'}
          step={f.type === 'integer' ? 1 : 'any'}
          value={String(value ?? '')}
          list={undefined}
          onInput={(e) => set({ ...values, [f.name]: e.currentTarget.value })}
        />
      )}
    </div>
  );
}

/** The values as the field types say: numbers as numbers, booleans as booleans; empty optional fields left out. */
export function content(fields: QuestionField[], values: Values): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const f of fields) {
    const v = values[f.name];
    if (f.type === 'boolean') out[f.name] = v === true;
    else if (v !== undefined && v !== '') out[f.name] = f.type === 'number' || f.type === 'integer' ? Number(v) : v;
  }
  return out;
}

export function Question({
  id,
  args,
  answered,
  onAnswer,
}: {
  id: string;
  args: QuestionArgs;
  answered?: string;
  onAnswer?: (answer: string) => void;
}) {
  const [values, setValues] = useState<Values>({});
  // A question that arrives takes the focus to its first field, where the answer is typed.
  const form = useRef<HTMLFormElement>(null);
  useEffect(() => {
    if (onAnswer && !answered) form.current?.querySelector<HTMLElement>('input, select, button')?.focus();
  }, [!!onAnswer && !answered]);
  const reply = (action: 'accept' | 'decline' | 'cancel') =>
    onAnswer?.(JSON.stringify(action === 'accept' ? { action, content: content(args.fields, values) } : { action }));
  return (
    <form
      ref={form}
      class="interaction"
      aria-labelledby={`${id}-title`}
      onSubmit={(e) => {
        e.preventDefault();
        reply('accept');
      }}
    >
      <h3 id={`${id}-title`}>The intern asks</h3>
      <p>{args.message}</p>
      {answered ? (
        <p class="answered">You answered: {answered}</p>
      ) : (
        onAnswer && (
          <>
            {args.fields.map((f, i) => input(f, `${id}-${i}`, values, setValues))}
            <div class="actions">
              <button type="submit">Accept</button>
              <button type="button" onClick={() => reply('decline')}>
                Decline
              </button>
              <button type="button" class="quiet" onClick={() => reply('cancel')}>
                Cancel
              </button>
            </div>
          </>
        )
      )}
    </form>
  );
}
