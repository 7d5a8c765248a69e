// Ends PGlite's database thread the way a fault inside it would, with an uncaught error thrown in
// that thread, from outside the code under test: through the V8 inspector of this process
// (node:inspector) or of a child started with `--inspect=127.0.0.1:<port>`. Nothing in the
// product (no route, variable or method) can do this, so tests of what follows the loss run the
// code that runs in production. The thread is told apart by its workerData: `{ dir }`, PGlite's
// directory, undefined for an in-memory database.
import { Session } from 'node:inspector/promises';
import { WebSocket } from 'undici';

/** The part of the inspector protocol used here, whichever process it reaches. */
type Inspector = {
  post(method: string, params: object): Promise<unknown>;
  on(event: string, listener: (params: any) => void): void;
  close(): void;
};

function ownInspector(): Inspector {
  const session = new Session();
  session.connect();
  return {
    post: (method, params) => session.post(method, params),
    on: (event, listener) => session.on(event, (m: { params: unknown }) => listener(m.params)),
    close: () => session.disconnect(),
  };
}

async function childInspector(port: number): Promise<Inspector> {
  const [target] = (await (await fetch(`http://127.0.0.1:${port}/json/list`)).json()) as {
    webSocketDebuggerUrl: string;
  }[];
  const ws = new WebSocket(target!.webSocketDebuggerUrl);
  await new Promise((resolve, reject) => {
    ws.onopen = resolve;
    ws.onerror = reject;
  });
  let seq = 0;
  const replies = new Map<number, (m: { result?: unknown; error?: { message: string } }) => void>();
  const listeners: { event: string; listener: (params: any) => void }[] = [];
  ws.onmessage = (e) => {
    const m = JSON.parse(String(e.data));
    if (m.id) replies.get(m.id)?.(m);
    else for (const l of listeners) if (l.event === m.method) l.listener(m.params);
  };
  return {
    post: (method, params) =>
      new Promise((resolve, reject) => {
        const id = ++seq;
        replies.set(id, (m) => (m.error ? reject(new Error(m.error.message)) : resolve(m.result)));
        ws.send(JSON.stringify({ id, method, params }));
      }),
    on: (event, listener) => listeners.push({ event, listener }),
    close: () => ws.close(),
  };
}

/** Resolves once the thread has ended. `inspectPort`: a child's inspector; absent, this process's. */
export async function crashDatabaseThread(opts: { dir?: string; inspectPort?: number }): Promise<void> {
  const inspector = opts.inspectPort ? await childInspector(opts.inspectPort) : ownInspector();
  // The inspector's answers do not keep the event loop alive; this timer does, and bounds the wait.
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>(
    (_, reject) => (timer = setTimeout(() => reject(new Error('the inspector did not answer within 10 s')), 10_000)),
  );
  try {
    await Promise.race([crash(inspector, opts.dir), deadline]);
  } finally {
    clearTimeout(timer);
    inspector.close();
  }
}

async function crash(inspector: Inspector, dirOfThread: string | undefined): Promise<void> {
  const workers: string[] = [];
  const waiting = new Map<string, (message: { id: number; result?: { result: { value: unknown } } }) => void>();
  const detached = new Map<string, () => void>();
  inspector.on('NodeWorker.attachedToWorker', (p) => workers.push(p.sessionId));
  inspector.on('NodeWorker.receivedMessageFromWorker', (p) => waiting.get(p.sessionId)?.(JSON.parse(p.message)));
  inspector.on('NodeWorker.detachedFromWorker', (p) => detached.get(p.sessionId)?.());
  // Every thread there is (nested ones too) is reported before enable answers.
  await inspector.post('NodeWorker.enable', { waitForDebuggerOnStart: false });
  const evaluate = (sessionId: string, expression: string) =>
    new Promise<unknown>((resolve) => {
      waiting.set(sessionId, (m) => m.id === 1 && resolve(m.result?.result.value));
      const message = {
        id: 1,
        method: 'Runtime.evaluate',
        params: { expression, includeCommandLineAPI: true, returnByValue: true },
      };
      void inspector.post('NodeWorker.sendMessageToWorker', { sessionId, message: JSON.stringify(message) });
    });
  const dir = dirOfThread === undefined ? 'undefined' : JSON.stringify(dirOfThread);
  const isDatabase = `(() => { const d = require('node:worker_threads').workerData; return typeof d === 'object' && d !== null && 'dir' in d && d.dir === ${dir}; })()`;
  const matches = [];
  for (const w of workers) if ((await evaluate(w, isDatabase)) === true) matches.push(w);
  if (matches.length !== 1)
    throw new Error(`expected one database thread for ${dir}, found ${matches.length} among ${workers.length} threads`);
  const thread = matches[0]!;
  const ended = new Promise<void>((resolve) => detached.set(thread, resolve));
  await evaluate(thread, `setImmediate(() => { throw new Error('injected crash'); }), true`);
  await ended;
}
