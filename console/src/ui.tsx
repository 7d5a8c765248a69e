// Small accessible building blocks: labelled fields that show the server's error beside them, a
// form-wide error, a confirmation dialog, status badges, a loading line.
import type { ComponentChildren } from 'preact';
import { useLayoutEffect, useRef, useState } from 'preact/hooks';
import type { Problem } from './api.ts';

type Base = { label: string; name: string; error?: string; hint?: string };

function Described({ id, error, hint }: { id: string; error?: string; hint?: string }) {
  return (
    <>
      {hint && (
        <p class="hint" id={`${id}-hint`}>
          {hint}
        </p>
      )}
      {error && (
        <p class="field-error" id={`${id}-error`}>
          {error}
        </p>
      )}
    </>
  );
}

const describedBy = (id: string, error?: string, hint?: string) =>
  [hint && `${id}-hint`, error && `${id}-error`].filter(Boolean).join(' ') || undefined;

export function Text(
  p: Base & {
    value: string;
    onInput: (v: string) => void;
    type?: 'text' | 'password' | 'number';
    required?: boolean;
    autoComplete?: string;
    placeholder?: string;
    list?: string;
    multiline?: boolean;
  },
) {
  const id = `f-${p.name}`;
  const common = {
    id,
    name: p.name,
    value: p.value,
    required: p.required,
    placeholder: p.placeholder,
    'aria-invalid': p.error ? true : undefined,
    'aria-describedby': describedBy(id, p.error, p.hint),
    onInput: (e: Event) => p.onInput((e.currentTarget as HTMLInputElement | HTMLTextAreaElement).value),
  };
  return (
    <div class="field">
      <label for={id}>{p.label}</label>
      {p.required && (
        <span class="required" aria-hidden="true">
          *
        </span>
      )}
      {p.multiline ? (
        <textarea {...common} rows={5} />
      ) : (
        <input
          {...common}
          type={(p.type ?? 'text') as 'text' /* Preact types allow `list` only on text-like inputs */}
          autoComplete={p.autoComplete ?? 'off'}
          list={p.list}
          spellcheck={false}
          step={p.type === 'number' ? 'any' : undefined}
        />
      )}
      <Described id={id} error={p.error} hint={p.hint} />
    </div>
  );
}

export function Check(p: Base & { checked: boolean; onChange: (v: boolean) => void }) {
  const id = `f-${p.name}`;
  return (
    <div class="field check">
      <input
        id={id}
        type="checkbox"
        name={p.name}
        checked={p.checked}
        aria-describedby={describedBy(id, p.error, p.hint)}
        onChange={(e) => p.onChange(e.currentTarget.checked)}
      />
      <label for={id}>{p.label}</label>
      <Described id={id} error={p.error} hint={p.hint} />
    </div>
  );
}

export function Choice(
  p: Base & { value: string; onChange: (v: string) => void; options: [string, string][]; required?: boolean },
) {
  const id = `f-${p.name}`;
  return (
    <div class="field">
      <label for={id}>{p.label}</label>
      {p.required && (
        <span class="required" aria-hidden="true">
          *
        </span>
      )}
      <select
        id={id}
        name={p.name}
        value={p.value}
        required={p.required}
        aria-invalid={p.error ? true : undefined}
        aria-describedby={describedBy(id, p.error, p.hint)}
        onChange={(e) => p.onChange(e.currentTarget.value)}
      >
        {p.options.map(([value, label]) => (
          <option key={value} value={value}>
            {label}
          </option>
        ))}
      </select>
      <Described id={id} error={p.error} hint={p.hint} />
    </div>
  );
}

/** What a refusal says, in words, with a retry where the server says one can help. */
export function Alert({ problem, words, onRetry }: { problem: Problem | null; words?: string; onRetry?: () => void }) {
  if (!problem) return null;
  const wait = problem.retryAfter ? ` You can retry in ${problem.retryAfter} s.` : '';
  return (
    <div class="alert" role="alert">
      <p>
        {words && <strong>{words} </strong>}
        {problem.message}
        {problem.retryable ? wait : ''}
      </p>
      {problem.retryable && onRetry && (
        <button type="button" onClick={onRetry}>
          Retry
        </button>
      )}
    </div>
  );
}

/** A modal confirmation (the native dialog keeps focus inside and closes on Escape). */
export function useConfirm(): [ComponentChildren, (question: string, action: string) => Promise<boolean>] {
  const ref = useRef<HTMLDialogElement>(null);
  const [text, setText] = useState({ question: '', action: '' });
  const answer = useRef<(ok: boolean) => void>(() => {});
  const ask = (question: string, action: string) =>
    new Promise<boolean>((resolve) => {
      answer.current = resolve;
      setText({ question, action });
      queueMicrotask(() => ref.current?.showModal());
    });
  const close = (ok: boolean) => {
    ref.current?.close();
    answer.current(ok);
  };
  const dialog = (
    <dialog ref={ref} aria-labelledby="confirm-question" onCancel={() => answer.current(false)}>
      <p id="confirm-question">{text.question}</p>
      <div class="actions">
        <button type="button" class="danger" onClick={() => close(true)}>
          {text.action}
        </button>
        <button type="button" onClick={() => close(false)} autofocus>
          Keep it
        </button>
      </div>
    </dialog>
  );
  return [dialog, ask];
}

export const Badge = ({ status }: { status: string }) => (
  <span class={`badge badge-${status}`}>{status.replace('_', ' ')}</span>
);

export const Loading = ({ what }: { what: string }) => (
  <p class="muted" role="status">
    Loading {what}…
  </p>
);

export function Page({ title, children }: { title: string; children: ComponentChildren }) {
  return (
    <section aria-labelledby="page-title">
      <h1 id="page-title" tabIndex={-1}>
        {title}
      </h1>
      {children}
    </section>
  );
}

/** A drawer's open state: opening moves the focus to its first control, Escape closes it and
 * returns the focus to the button that opened it. */
export function useDrawer(drawerId: string, toggleId: string): [boolean, (open: boolean) => void] {
  const [open, setOpen] = useState(false);
  // Before paint: the focus moves as the drawer appears.
  useLayoutEffect(() => {
    if (!open) return;
    document.getElementById(drawerId)?.querySelector<HTMLElement>('a, button:not(:disabled)')?.focus();
    const onKey = (e: KeyboardEvent) => {
      if (e.key !== 'Escape') return;
      setOpen(false);
      document.getElementById(toggleId)?.focus();
    };
    addEventListener('keydown', onKey);
    return () => removeEventListener('keydown', onKey);
  }, [open]);
  return [open, setOpen];
}
