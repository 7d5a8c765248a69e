// Chat with one intern: its sessions (kept by the gateway, docs/guides/sessions.md), the transcript streaming as chunks
// arrive, reasoning folded away, a paused run's request answered in place, steering while a turn
// runs, refusals in words with a retry where the server says one can help.
import { Component } from 'preact';
import { useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import { ApiProblem, api, problem, type Problem } from '../api.ts';
import {
  answerBody,
  applyChunk,
  inWords,
  promptBody,
  streamChat,
  type ApprovalMode,
  type ChatBody,
  type Part,
  type Session,
  type Turn,
} from '../chat.ts';
import { listSessions, loadSession, newSessionId, type SessionInfo } from '../sessions.ts';
import { Answer } from '../answer.tsx';
import { Alert, Badge, useDrawer } from '../ui.tsx';
import type { Intern } from './interns.tsx';
import { Permission, Question, optionLabel } from './interaction.tsx';
import { ToolBlock } from './tool.tsx';
import { isAnswer } from '../wire.ts';

/** Turns rendered when a session opens, and added by each "Show earlier turns". */
const WINDOW = 50;

/** Within a few pixels of the end: the reader is at the bottom (rounding leaves fractions). */
const atBottom = (el: HTMLElement) => el.scrollHeight - el.scrollTop - el.clientHeight < 24;

/** A refused reply leaves the run paused (docs/reference/intern-chat.md#run-states), unless its question is gone. */
const QUESTION_GONE = new Set(['interaction_not_pending', 'interaction_unknown', 'not_found']);

function answerLabel(part: Extract<Part, { type: 'interaction' }>, answer: string): string {
  if (part.args.kind === 'permission') return answer === 'cancel' ? 'Cancel the turn' : optionLabel(answer);
  let a: unknown;
  try {
    a = JSON.parse(answer);
  } catch {}
  // Another client may have answered in words of its own: they are shown as they are.
  if (!isAnswer(a)) return answer;
  if (a.action !== 'accept') return a.action === 'decline' ? 'Declined' : 'Cancelled';
  return `Accepted (${
    Object.entries(a.content ?? {})
      .map(([k, v]) => `${k}: ${JSON.stringify(v)}`)
      .join(', ') || 'no values'
  })`;
}

type TurnProps = {
  turn: Turn;
  rev: number;
  last: boolean;
  onAnswer: (turn: Turn, part: Extract<Part, { type: 'interaction' }>, answer: string) => void;
  onRetry: (turn: Turn) => void;
};

/** Re-renders only when its turn changed: a long transcript costs nothing per streamed chunk. */
class TurnView extends Component<TurnProps> {
  override shouldComponentUpdate(next: TurnProps) {
    return next.rev !== this.props.rev || next.last !== this.props.last || next.turn !== this.props.turn;
  }
  override render({ turn, last, onAnswer, onRetry }: TurnProps) {
    const live = last && (turn.status === 'paused' || turn.status === 'failed');
    return (
      <article class={`turn turn-${turn.status}`} aria-label={`Turn: ${turn.prompt.slice(0, 60)}`}>
        <div class="prompt">
          <span class="visually-hidden">You: </span>
          {turn.prompt}
          <span class="mode">{turn.mode === 'manual' ? 'asks before commands' : 'self-drive'}</span>
        </div>
        <div class="reply">
          {turn.parts.map((p, i) => {
            const id = `${turn.id}-${i}`;
            const open = live && i === turn.parts.length - 1;
            switch (p.type) {
              case 'text':
                return <Answer text={p.text} />;
              case 'reasoning':
                return (
                  <details class="reasoning">
                    <summary>Reasoning</summary>
                    <div class="text">{p.text}</div>
                  </details>
                );
              case 'steer':
                return <p class="steer">You steered: {p.text}</p>;
              case 'tool':
                return <ToolBlock tool={p.tool} />;
              case 'error':
                return (
                  <Alert
                    problem={p.problem}
                    words={inWords(p.problem)}
                    onRetry={open ? () => onRetry(turn) : undefined}
                  />
                );
              case 'interaction': {
                const answer = turn.status === 'paused' && !p.answer ? (a: string) => onAnswer(turn, p, a) : undefined;
                return p.args.kind === 'elicitation' ? (
                  <Question id={id} args={p.args} answered={p.answer} onAnswer={answer} />
                ) : (
                  <Permission args={p.args} answered={p.answer} onAnswer={answer} />
                );
              }
              default:
                return null;
            }
          })}
          {turn.status === 'streaming' && (
            <p class="muted typing" aria-hidden="true">
              …
            </p>
          )}
          {turn.status === 'interrupted' && (
            <p class="muted">
              This turn was stopped (the page closed or reloaded, or you pressed Stop), which cancels its run.
            </p>
          )}
        </div>
        {turn.usage && (
          <p class="usage muted">
            {turn.usage.prompt_tokens} prompt + {turn.usage.completion_tokens} completion tokens
            {turn.usage.cost !== undefined ? `, $${turn.usage.cost.toFixed(6)}` : ''}
            {turn.model ? ` · ${turn.model}` : ''}
          </p>
        )}
      </article>
    );
  }
}

export function Chat({ internId }: { internId: string }) {
  // The sessions opened or started in this page; the drawer lists the gateway's (`listed`) too.
  const sessions = useRef<Session[]>([]);
  const [listed, setListed] = useState<SessionInfo[]>([]);
  const [current, setCurrent] = useState<string>(newSessionId);
  const [loading, setLoading] = useState(false);
  /** Until the gateway's list first arrives (the page may then open its newest session). */
  const [listing, setListing] = useState(true);
  /** The reader chose a session (or sent a prompt): the newest listed one no longer opens by itself. */
  const chosen = useRef(false);
  const [, setTick] = useState(0);
  const [intern, setIntern] = useState<Intern | null>(null);
  const [notice, setNotice] = useState<Problem | null>(null);
  const [prompt, setPrompt] = useState('');
  const [mode, setMode] = useState<ApprovalMode>('self-drive');
  const [announce, setAnnounce] = useState('');
  const stream = useRef<AbortController | null>(null);
  const [drawer, setDrawer] = useDrawer('sessions', 'sessions-toggle');
  const rerender = () => setTick((t) => t + 1);
  const refreshList = () =>
    listSessions(internId).then(
      (l) => {
        setListed(l);
        return l;
      },
      (e) => {
        setNotice(problem(e));
        return [] as SessionInfo[];
      },
    );

  const loadIntern = () =>
    api<Intern>('GET', `/interns/${encodeURIComponent(internId)}`).then(setIntern, (e) => setNotice(problem(e)));
  useEffect(() => {
    void loadIntern();
    // The page opens at the most recently used session, as it was left in any browser.
    void refreshList().then((l) => {
      if (l[0] && !chosen.current) void openSession(l[0].id);
      setListing(false);
    });
    return () => stream.current?.abort();
  }, []);
  useEffect(() => {
    if (intern?.status !== 'provisioning') return;
    const t = setTimeout(loadIntern, 1000);
    return () => clearTimeout(t);
  }, [intern]);

  const session = sessions.current.find((s) => s.id === current);
  const turns = session?.turns ?? [];
  const running = turns.find((t) => t.status === 'streaming');
  // Follow the stream while the reader is at the bottom of the transcript; scrolling up to read
  // stops it and offers "Jump to latest"; reaching the bottom again (or that button) resumes it.
  const transcript = useRef<HTMLDivElement>(null);
  const following = useRef(true);
  const [away, setAway] = useState(false);
  // Only a move up stops following: a scroll event can come after new text made the transcript
  // taller (the reader has not moved, yet is no longer at the bottom).
  const lastTop = useRef(0);
  const onScroll = () => {
    const el = transcript.current;
    if (!el) return;
    if (atBottom(el)) following.current = true;
    else if (el.scrollTop < lastTop.current) following.current = false;
    lastTop.current = el.scrollTop;
    if (away === following.current) setAway(!following.current);
  };
  const jump = () => {
    following.current = true;
    setAway(false);
    const el = transcript.current;
    if (!el) return;
    el.scrollTop = el.scrollHeight;
    lastTop.current = el.scrollTop;
  };
  // Scrolled whenever the transcript's content changes size (new text, a turn laid out late as
  // content-visibility lets it be), before the frame is painted.
  const content = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const observer = new ResizeObserver(() => {
      const el = transcript.current;
      if (!following.current || !el) return;
      el.scrollTop = el.scrollHeight;
      lastTop.current = el.scrollTop;
    });
    if (content.current) observer.observe(content.current);
    return () => observer.disconnect();
  }, []);
  useEffect(jump, [current]);

  // A long session opens with its latest turns only: rendering a thousand answers' Markdown at
  // once would hold the first screen back. Earlier ones come on demand, the reader's place kept.
  const [shown, setShown] = useState(WINDOW);
  useEffect(() => setShown(WINDOW), [current]);
  const from = Math.max(0, turns.length - shown);
  const keep = useRef<number | null>(null);
  const showEarlier = () => {
    const el = transcript.current;
    keep.current = el ? el.scrollHeight - el.scrollTop : null;
    setShown(shown + WINDOW);
  };
  useLayoutEffect(() => {
    const el = transcript.current;
    if (keep.current === null || !el) return;
    el.scrollTop = el.scrollHeight - keep.current;
    lastTop.current = el.scrollTop;
    keep.current = null;
  });

  /** Reads a session's transcript from the gateway, unless this page holds a longer one (its
   * latest request may not be written yet). */
  const openSession = async (id: string) => {
    setCurrent(id);
    setLoading(true);
    try {
      const got = await loadSession(internId, id, answerLabel);
      const i = sessions.current.findIndex((s) => s.id === id);
      if (i < 0) sessions.current.push(got);
      else if (got.turns.length >= sessions.current[i]!.turns.length) sessions.current[i] = got;
    } catch (e) {
      setNotice(problem(e));
    }
    setLoading(false);
  };

  const sessionFor = (text: string) => {
    chosen.current = true;
    let s = sessions.current.find((x) => x.id === current);
    if (!s) sessions.current.unshift((s = { id: current, title: text.slice(0, 60), updated: Date.now(), turns: [] }));
    s.updated = Date.now();
    return s;
  };

  /** Streams a request into `turn` (a new turn, a reply continuing it, or a retry). */
  const run = async (turn: Turn, body: ChatBody) => {
    const controller = new AbortController();
    stream.current = controller;
    turn.status = 'streaming';
    turn.last = body;
    turn.rev++;
    rerender();
    try {
      await streamChat(internId, body, { chunk: (c) => applyChunk(turn, c), read: rerender }, controller.signal);
    } catch (e) {
      if (controller.signal.aborted) turn.status = 'interrupted';
      else {
        const p = problem(e);
        const reply = body.messages.some((m) => (m as { role: string }).role === 'tool');
        const refusedReply = reply && e instanceof ApiProblem && p.status !== 502 && !QUESTION_GONE.has(p.reason ?? '');
        if (refusedReply) {
          const asked = [...turn.parts].reverse().find((x) => x.type === 'interaction');
          if (asked && asked.type === 'interaction') asked.answer = undefined;
        }
        turn.parts.push({ type: 'error', problem: p });
        turn.status = refusedReply ? 'paused' : 'failed';
      }
    }
    if (turn.status === 'streaming') turn.status = 'done';
    turn.rev++;
    if (stream.current === controller) stream.current = null;
    setAnnounce(
      turn.status === 'paused'
        ? 'The intern is waiting for your answer.'
        : turn.status === 'done'
          ? 'The turn finished.'
          : turn.status === 'failed'
            ? 'The turn failed.'
            : '',
    );
    void refreshList();
    rerender();
  };

  const newTurn = (text: string, body: ChatBody): Turn => ({
    id: `t${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`,
    prompt: text,
    mode,
    parts: [],
    status: 'streaming',
    last: body,
    rev: 0,
  });

  const send = async (e: Event) => {
    e.preventDefault();
    const text = prompt.trim();
    // While a session loads, a prompt would go to a transcript about to be replaced.
    if (!text || loading) return;
    setPrompt('');
    // Sending is a return to the conversation's end, wherever the reader had scrolled.
    jump();
    const s = sessionFor(text);
    const body = promptBody(s.id, text, mode);
    if (!running) {
      const turn = newTurn(text, body);
      s.turns.push(turn);
      return run(turn, body);
    }
    // Steering: the running turn takes the message (202); if it ended meanwhile, the message starts a turn of its own.
    let turn: Turn | null = null;
    try {
      const got = await streamChat(internId, body, {
        open: () => void s.turns.push((turn = newTurn(text, body))),
        chunk: (c) => turn && applyChunk(turn, c),
        read: rerender,
      });
      if (got === 'steered') {
        running.parts.push({ type: 'steer', text });
        running.rev++;
      } else if (turn) (turn as Turn).status = (turn as Turn).status === 'streaming' ? 'done' : (turn as Turn).status;
      setNotice(null);
    } catch (err) {
      setNotice(problem(err));
    }
    void refreshList();
    rerender();
  };

  const answer = (turn: Turn, part: Extract<Part, { type: 'interaction' }>, reply: string) => {
    part.answer = answerLabel(part, reply);
    return run(turn, answerBody(current, part.call, reply));
  };

  const retry = (turn: Turn) => {
    const failed = turn.parts[turn.parts.length - 1];
    if (failed?.type === 'error') turn.parts.pop();
    return run(turn, turn.last);
  };

  const provision = async () => {
    try {
      await api('POST', `/interns/${encodeURIComponent(internId)}/provision`);
    } catch (e) {
      setNotice(problem(e));
    }
    await loadIntern();
  };

  // The gateway's sessions and this page's, by the latest use; a session only this page knows
  // (its first turn is still streaming) first.
  type Listed = { id: string; title: string; updated: number; waiting: boolean };
  const byId = new Map<string, Listed>();
  for (const l of listed)
    byId.set(l.id, { id: l.id, title: l.title, updated: Date.parse(l.updated_at), waiting: l.state === 'paused' });
  for (const s of sessions.current) {
    if (!s.turns.length) continue;
    const known = byId.get(s.id);
    byId.set(s.id, {
      id: s.id,
      title: known?.title ?? s.title,
      updated: Math.max(s.updated, known?.updated ?? 0),
      waiting: s.turns.some((t) => t.status === 'paused'),
    });
  }
  const ordered = [...byId.values()].sort((a, b) => b.updated - a.updated);
  const pick = (id: string) => {
    chosen.current = true;
    setDrawer(false);
    if (id !== current) void openSession(id);
  };
  const fresh = () => {
    chosen.current = true;
    setCurrent(newSessionId());
    setDrawer(false);
  };
  return (
    <section class="chat" aria-labelledby="page-title" aria-busy={listing || loading ? 'true' : 'false'}>
      <div class="chat-head">
        <h1 id="page-title" tabIndex={-1}>
          {intern?.name ?? 'Intern'}
        </h1>
        {intern && <Badge status={intern.status} />}
        {intern && (
          <span class="muted">
            <span class="visually-hidden">Model: </span>
            <code>{intern.effective_model}</code>
          </span>
        )}
        {intern && intern.status !== 'running' && intern.status !== 'provisioning' && (
          <button type="button" onClick={provision}>
            Provision
          </button>
        )}
        <button
          type="button"
          id="sessions-toggle"
          class="quiet drawer-toggle"
          aria-expanded={drawer}
          aria-controls="sessions"
          onClick={() => setDrawer(!drawer)}
        >
          Sessions ({ordered.length})
        </button>
        <a href="#/interns" class="quiet">
          All interns
        </a>
      </div>
      <div class="chat-body">
        <nav id="sessions" class={drawer ? 'sessions open' : 'sessions'} aria-label="Sessions">
          <h2>Sessions</h2>
          <button type="button" onClick={fresh} disabled={!!running}>
            New session
          </button>
          <ul>
            {ordered.map((s) => (
              <li key={s.id}>
                <button
                  type="button"
                  class="session"
                  aria-current={s.id === current ? 'true' : undefined}
                  onClick={() => pick(s.id)}
                  disabled={!!running}
                >
                  {s.title}
                  {s.waiting && <span class="badge badge-paused">waiting</span>}
                </button>
              </li>
            ))}
          </ul>
        </nav>
        <div class="conversation">
          <div class="transcript-wrap">
            <div class="transcript" ref={transcript} onScroll={onScroll}>
              <div ref={content}>
                {loading && !turns.length && <p class="muted">Loading the session…</p>}
                {!loading && turns.length === 0 && (
                  <p class="muted">
                    A new session. Its id is <code>{current}</code>.
                  </p>
                )}
                {from > 0 && (
                  <button type="button" class="quiet earlier" onClick={showEarlier}>
                    Show earlier turns ({from} more)
                  </button>
                )}
                {turns.slice(from).map((t, i) => (
                  <TurnView
                    key={t.id}
                    turn={t}
                    rev={t.rev}
                    last={from + i === turns.length - 1}
                    onAnswer={answer}
                    onRetry={retry}
                  />
                ))}
              </div>
            </div>
            {away && (
              <button type="button" class="jump" onClick={jump}>
                Jump to latest ↓
              </button>
            )}
          </div>
          <p class="visually-hidden" role="status">
            {announce}
          </p>
          <Alert problem={notice} words={notice ? inWords(notice) : undefined} />
          <form class="composer" onSubmit={send}>
            <label for="prompt">{running ? 'Steer the running turn' : 'Message'}</label>
            <textarea
              id="prompt"
              name="prompt"
              rows={2}
              value={prompt}
              onInput={(e) => setPrompt(e.currentTarget.value)}
              onKeyDown={(e) => {
                if (e.key !== 'Enter' || e.shiftKey || e.isComposing) return;
                e.preventDefault();
                e.currentTarget.form?.requestSubmit();
              }}
              aria-describedby="prompt-hint"
            />
            <p id="prompt-hint" class="hint">
              Enter sends, Shift+Enter starts a new line.{running ? ' The message reaches the turn while it runs.' : ''}
            </p>
            <div class="actions">
              <label for="mode" class="inline">
                Approval
              </label>
              <select
                id="mode"
                name="mode"
                value={mode}
                onChange={(e) => setMode(e.currentTarget.value as ApprovalMode)}
                disabled={!!running}
              >
                <option value="self-drive">Self-drive: run commands without asking</option>
                <option value="manual">Manual: ask before running commands</option>
              </select>
              <button type="submit" disabled={!prompt.trim() || loading}>
                {running ? 'Steer' : 'Send'}
              </button>
              {running && (
                <button type="button" class="danger" onClick={() => stream.current?.abort()}>
                  Stop
                </button>
              )}
            </div>
          </form>
        </div>
      </div>
    </section>
  );
}
