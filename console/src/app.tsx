// The shell: the key screen, what the key may reach (probed once), navigation by the URL's hash
// (which carries screen and intern ids, never the key), and the screens.
import { Component, type ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { forgetKey, problemOf, request, storedKey, storeKey, whenKeyRefused } from './api.ts';
import { Text, useDrawer } from './ui.tsx';
import { isAgentList } from './wire.ts';
import { Interns } from './screens/interns.tsx';
import { Chat } from './screens/chat.tsx';
import { Files } from './screens/files.tsx';
import { Workspaces } from './screens/workspaces.tsx';
import { Presets } from './screens/presets.tsx';
import { Credentials } from './screens/credentials.tsx';
import { Usage } from './screens/usage.tsx';
import { Guardrails, Keys } from './screens/keys.tsx';

export type Agent = {
  id: string;
  name: string;
  description: string;
  supports: { sessions: boolean; questions: boolean; steering: boolean };
};
/** management: the key reaches workspaces, presets and credentials; interns: its account is in the programme. */
export type Access = { management: boolean; interns: boolean; agents: Agent[] };

/** What a key may reach, from the answers of three reads; null for a key the gateway refuses. */
async function probe(key: string): Promise<Access | string> {
  const agents = await request('GET', '/agents', undefined, { key });
  if (!agents.ok) return (await problemOf(agents)).message;
  const [workspaces, interns] = await Promise.all([
    request('GET', '/workspaces?limit=1', undefined, { key }),
    request('GET', '/interns?limit=1', undefined, { key }),
  ]);
  const list: unknown = await agents.json();
  if (!isAgentList(list)) return 'the gateway answered with an agent list the console cannot read';
  return { management: workspaces.ok, interns: interns.ok, agents: list.data };
}

/** A screen that throws shows so, in words, instead of leaving the whole console unresponsive. */
class Boundary extends Component<{ children: ComponentChildren }, { failed?: string }> {
  override componentDidCatch(e: Error) {
    this.setState({ failed: e.message });
  }
  override render() {
    return this.state.failed ? (
      <p role="alert" class="alert">
        This screen failed ({this.state.failed}). Reload the page to try again.
      </p>
    ) : (
      this.props.children
    );
  }
}

function useHash() {
  const [hash, setHash] = useState(location.hash);
  useEffect(() => {
    const on = () => setHash(location.hash);
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  return hash.replace(/^#\/?/, '').split('/').filter(Boolean).map(decodeURIComponent);
}

function KeyScreen({ onAccess, refused }: { onAccess: (a: Access) => void; refused: string }) {
  const [key, setKey] = useState('');
  const [error, setError] = useState(refused);
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    const got = await probe(key.trim()).catch((err: Error) => `the gateway could not be reached (${err.message})`);
    setBusy(false);
    if (typeof got === 'string') return setError(got);
    storeKey(key.trim());
    onAccess(got);
  };
  return (
    <main class="key-screen">
      <h1>cohort console</h1>
      <form onSubmit={submit} aria-describedby="key-note">
        <Text
          label="API key"
          name="key"
          type="password"
          value={key}
          onInput={setKey}
          required
          error={error}
          autoComplete="off"
        />
        <p id="key-note" class="hint">
          A key starts with <code>ck-</code>. The gateway’s first start writes two to <code>data/bootstrap.json</code> (
          <code>management_key</code> for every screen, <code>api_key</code> for interns); an operator makes more with{' '}
          <code>cohort key create</code>. It stays in this browser tab only and is forgotten when the tab closes.
        </p>
        <button type="submit" disabled={busy || !key.trim()}>
          {busy ? 'Checking…' : 'Open the console'}
        </button>
      </form>
    </main>
  );
}

export function App() {
  const [access, setAccess] = useState<Access | null>(null);
  const [refused, setRefused] = useState('');
  const [checking, setChecking] = useState(!!storedKey());
  const [menu, setMenu] = useDrawer('screens', 'menu-toggle');
  const route = useHash();

  const signOut = (why = '') => {
    forgetKey();
    location.hash = '/';
    setAccess(null);
    setRefused(why);
  };
  useEffect(() => {
    whenKeyRefused(() => signOut('The gateway refused this key (revoked or invalid). Paste another.'));
    const key = storedKey();
    if (key)
      void probe(key)
        .then(
          (a) => (typeof a === 'string' ? signOut(a) : setAccess(a)),
          () => signOut('the gateway could not be reached'),
        )
        .finally(() => setChecking(false));
  }, []);
  useEffect(() => {
    setMenu(false);
    document.getElementById('page-title')?.focus();
  }, [route.join('/')]);

  if (checking) return <p role="status">Checking the key…</p>;
  if (!access) return <KeyScreen onAccess={setAccess} refused={refused} />;

  const [screen = access.interns ? 'interns' : 'workspaces', id, sub] = route;
  // The screens, one entry each: [route, label, whether this key may use it]. Usage reads
  // GET /activity, which only a management key may.
  const links: [string, string, boolean][] = [
    ['interns', 'Interns', access.interns],
    ['workspaces', 'Workspaces', access.management],
    ['presets', 'Presets', access.management],
    ['credentials', 'Credentials', access.management],
    ['keys', 'Keys', access.management],
    ['guardrails', 'Guardrails', access.management],
    ['usage', 'Usage', access.management],
  ];
  const link = links.find(([s]) => s === screen);
  const fill = screen === 'interns' && !!id;
  return (
    // The chat fills the window (its transcript scrolls, its composer stays in view); other screens scroll as pages.
    <div class={fill ? 'shell fill' : 'shell'}>
      {/* A button, not a link: the URL's hash is the console's route. */}
      <button type="button" class="skip" onClick={() => document.getElementById('main')?.focus()}>
        Skip to content
      </button>
      <header>
        <button
          type="button"
          id="menu-toggle"
          class="quiet menu-toggle"
          aria-expanded={menu}
          aria-controls="screens"
          onClick={() => setMenu(!menu)}
        >
          Menu
        </button>
        <span class="brand">cohort</span>
        <nav id="screens" class={menu ? 'open' : undefined} aria-label="Screens">
          {links
            .filter(([, , shown]) => shown)
            .map(([s, label]) => (
              <a href={`#/${s}`} aria-current={s === screen ? 'page' : undefined}>
                {label}
              </a>
            ))}
        </nav>
        <button type="button" class="quiet" onClick={() => signOut()}>
          Forget key
        </button>
      </header>
      <main id="main" tabIndex={-1}>
        <Boundary key={route.join('/')}>
          {!link ? (
            <p role="alert">There is no such screen.</p>
          ) : !link[2] ? (
            <p role="alert">
              {screen === 'interns'
                ? 'This key’s account is not in the interns programme.'
                : 'This screen needs a management key.'}
            </p>
          ) : screen === 'interns' && id && sub === 'files' ? (
            <Files internId={id} path={route.slice(3).join('/')} key={route.join('/')} />
          ) : screen === 'interns' && id ? (
            <Chat internId={id} key={id} />
          ) : screen === 'interns' ? (
            <Interns access={access} />
          ) : screen === 'workspaces' ? (
            <Workspaces />
          ) : screen === 'presets' ? (
            <Presets />
          ) : screen === 'credentials' ? (
            <Credentials />
          ) : screen === 'keys' ? (
            <Keys />
          ) : screen === 'guardrails' ? (
            <Guardrails />
          ) : (
            <Usage />
          )}
        </Boundary>
      </main>
    </div>
  );
}
