// Provider credentials (BYOK): per workspace, each shown by its masked label; create, rotate
// (a new key replaces the sealed one) and delete after a confirmation. The raw key is write-only:
// typed into a password field, sent once, never shown or kept.
import { useEffect, useState } from 'preact/hooks';
import { api, problem, type Problem } from '../api.ts';
import { Alert, Check, Choice, Loading, Page, Text, useConfirm } from '../ui.tsx';
import type { Workspace } from './workspaces.tsx';

type Credential = {
  id: string;
  name: string | null;
  provider: string;
  label: string;
  workspace_id: string;
  disabled: boolean;
  is_byok_only: boolean;
  is_fallback: boolean;
  is_required: boolean;
  declared_zdr: boolean | null;
  allowed_models: string[] | null;
  created_at: string;
};

/** The provider slugs the gateway accepts, from its own OpenAPI document (one list, kept there). */
async function providers(): Promise<string[]> {
  type Doc = {
    paths: Record<
      string,
      {
        post?: {
          requestBody?: { content: Record<string, { schema: { properties: { provider?: { enum?: string[] } } } }> };
        };
      }
    >;
  };
  const doc = await api<Doc>('GET', '/openapi.json');
  return doc.paths['/byok']?.post?.requestBody?.content['application/json']?.schema.properties.provider?.enum ?? [];
}

const list = (s: string) => {
  const items = s
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean);
  return items.length ? items : null;
};
const FLAGS = [
  ['disabled', 'Create it disabled'],
  ['is_fallback', 'Fallback: used only after the other keys of this provider'],
  ['is_byok_only', 'Only my keys for this provider (never shared capacity)'],
  ['is_required', 'Required for the models it applies to'],
] as const;

function CreateCredential({
  workspaces,
  workspace,
  onCreated,
}: {
  workspaces: Workspace[];
  workspace: string;
  onCreated: () => void;
}) {
  const empty = {
    provider: 'openai',
    key: '',
    name: '',
    workspace_id: workspace,
    declared_zdr: '',
    allowed_models: '',
    allowed_user_ids: '',
    allowed_api_key_hashes: '',
    disabled: false,
    is_fallback: false,
    is_byok_only: false,
    is_required: false,
  };
  const [form, setForm] = useState(empty);
  const [slugs, setSlugs] = useState<string[]>([]);
  const [search, setSearch] = useState('');
  const [error, setError] = useState<Problem | null>(null);
  useEffect(() => void providers().then(setSlugs, () => {}), []);
  useEffect(() => setForm((f) => ({ ...f, workspace_id: workspace })), [workspace]);
  const set = (k: keyof typeof form) => (v: unknown) => setForm({ ...form, [k]: v });
  const submit = async (e: Event) => {
    e.preventDefault();
    try {
      await api('POST', '/byok', {
        provider: form.provider,
        key: form.key,
        ...(form.name ? { name: form.name } : {}),
        workspace_id: form.workspace_id,
        declared_zdr: form.declared_zdr === '' ? null : form.declared_zdr === 'true',
        allowed_models: list(form.allowed_models),
        allowed_user_ids: list(form.allowed_user_ids),
        allowed_api_key_hashes: list(form.allowed_api_key_hashes),
        ...Object.fromEntries(FLAGS.map(([k]) => [k, form[k]])),
      });
      setError(null);
      setForm({ ...empty, workspace_id: form.workspace_id });
      onCreated();
    } catch (err) {
      setError(problem(err));
    }
  };
  const f = error?.fields ?? {};
  // The list is long (every provider the gateway knows): a search narrows it, and picks its first match.
  const matches = slugs.filter((p) => p.includes(search.trim().toLowerCase()));
  const shown = matches.includes(form.provider) || !slugs.length ? matches : [form.provider, ...matches];
  const narrow = (q: string) => {
    setSearch(q);
    const first = slugs.find((p) => p.includes(q.trim().toLowerCase()));
    if (first && !form.provider.includes(q.trim().toLowerCase())) setForm({ ...form, provider: first });
  };
  return (
    <form class="card" onSubmit={submit} aria-labelledby="new-credential">
      <h2 id="new-credential">New provider credential</h2>
      <Text
        label="Search providers"
        name="provider-search"
        value={search}
        onInput={narrow}
        hint={`${matches.length} of ${slugs.length} providers`}
      />
      <Choice
        label="Provider"
        name="provider"
        value={form.provider}
        onChange={set('provider')}
        options={(shown.length ? shown : [form.provider]).map((s) => [s, s])}
        required
        error={f.provider}
      />
      <Text
        label="Provider API key"
        name="key"
        type="password"
        autoComplete="new-password"
        value={form.key}
        onInput={set('key')}
        required
        error={f.key}
        hint="Stored sealed; only a masked label is ever shown."
      />
      <Text label="Name" name="name" value={form.name} onInput={set('name')} error={f.name} />
      <Choice
        label="Workspace"
        name="workspace_id"
        value={form.workspace_id}
        onChange={set('workspace_id')}
        options={workspaces.map((w) => [w.id, w.name])}
        error={f.workspace_id}
      />
      <Choice
        label="Zero data retention"
        name="declared_zdr"
        value={form.declared_zdr}
        onChange={set('declared_zdr')}
        options={[
          ['', 'Inherit the provider’s policy'],
          ['true', 'Declared: retains no data'],
          ['false', 'Declared: retains data'],
        ]}
        error={f.declared_zdr}
      />
      {FLAGS.map(([k, label]) => (
        <Check key={k} label={label} name={k} checked={form[k]} onChange={set(k)} error={f[k]} />
      ))}
      <Text
        label="Allowed models"
        name="allowed_models"
        value={form.allowed_models}
        onInput={set('allowed_models')}
        error={f.allowed_models}
        hint="Comma-separated model slugs; empty allows every model."
      />
      <Text
        label="Allowed user ids"
        name="allowed_user_ids"
        value={form.allowed_user_ids}
        onInput={set('allowed_user_ids')}
        error={f.allowed_user_ids}
        hint="Comma-separated; empty allows everyone."
      />
      <Text
        label="Allowed API key hashes"
        name="allowed_api_key_hashes"
        value={form.allowed_api_key_hashes}
        onInput={set('allowed_api_key_hashes')}
        error={f.allowed_api_key_hashes}
        hint="Comma-separated SHA-256 hex of your API keys; empty allows every key."
      />
      <Alert problem={error && !Object.keys(f).length ? error : null} />
      <button type="submit">Add credential</button>
    </form>
  );
}

function Rotate({ credential, onDone }: { credential: Credential; onDone: () => void }) {
  const [key, setKey] = useState('');
  const [error, setError] = useState<Problem | null>(null);
  const submit = async (e: Event) => {
    e.preventDefault();
    try {
      await api('PATCH', `/byok/${credential.id}`, { key });
      onDone();
    } catch (err) {
      setError(problem(err));
    }
  };
  return (
    <form onSubmit={submit} aria-label={`Rotate ${credential.label}`}>
      <Text
        label="New provider API key"
        name={`rotate-${credential.id}`}
        type="password"
        autoComplete="new-password"
        value={key}
        onInput={setKey}
        required
        error={error?.fields.key}
      />
      <Alert problem={error && !error.fields.key ? error : null} />
      <div class="actions">
        <button type="submit">Replace the key</button>
        <button type="button" class="quiet" onClick={onDone}>
          Cancel
        </button>
      </div>
    </form>
  );
}

export function Credentials() {
  const [workspaces, setWorkspaces] = useState<Workspace[]>([]);
  const [workspace, setWorkspace] = useState('');
  const [items, setItems] = useState<Credential[] | null>(null);
  const [rotating, setRotating] = useState<string | null>(null);
  const [error, setError] = useState<Problem | null>(null);
  const [confirm, ask] = useConfirm();
  useEffect(
    () =>
      void api<{ data: Workspace[] }>('GET', '/workspaces?limit=100').then(
        (r) => {
          setWorkspaces(r.data);
          setWorkspace(r.data[0]?.id ?? '');
        },
        (e) => setError(problem(e)),
      ),
    [],
  );
  const load = () =>
    workspace
      ? api<{ data: Credential[] }>('GET', `/byok?workspace_id=${workspace}&limit=100`).then(
          (r) => setItems(r.data),
          (e) => setError(problem(e)),
        )
      : Promise.resolve();
  useEffect(() => void load(), [workspace]);
  const remove = async (c: Credential) => {
    if (!(await ask(`Delete the ${c.provider} credential ${c.label}? Requests will stop using it at once.`, 'Delete')))
      return;
    try {
      await api('DELETE', `/byok/${c.id}`);
    } catch (e) {
      setError(problem(e));
    }
    await load();
  };
  return (
    <Page title="Provider credentials">
      <Alert problem={error} />
      <Choice
        label="Workspace"
        name="list-workspace"
        value={workspace}
        onChange={setWorkspace}
        options={workspaces.map((w) => [w.id, w.name])}
      />
      {!items ? (
        <Loading what="credentials" />
      ) : items.length === 0 ? (
        <p>No credentials in this workspace.</p>
      ) : (
        <ul class="cards">
          {items.map((c) => (
            <li key={c.id} class="card" data-credential={c.name ?? c.label}>
              <h2>
                {c.name ?? c.provider} <code class="label">{c.label}</code>
              </h2>
              <p class="muted">
                {c.provider}
                {c.disabled ? ' · disabled' : ''}
                {c.is_fallback ? ' · fallback' : ''}
                {c.is_byok_only ? ' · only own keys' : ''}
                {c.is_required ? ' · required' : ''}
                {c.allowed_models ? ` · models: ${c.allowed_models.join(', ')}` : ''}
              </p>
              {rotating === c.id ? (
                <Rotate
                  credential={c}
                  onDone={() => {
                    setRotating(null);
                    void load();
                  }}
                />
              ) : (
                <div class="actions">
                  <button type="button" onClick={() => setRotating(c.id)}>
                    Rotate<span class="visually-hidden"> {c.label}</span>
                  </button>
                  <button type="button" class="danger" onClick={() => remove(c)}>
                    Delete<span class="visually-hidden"> {c.label}</span>
                  </button>
                </div>
              )}
            </li>
          ))}
        </ul>
      )}
      {workspaces.length > 0 && <CreateCredential workspaces={workspaces} workspace={workspace} onCreated={load} />}
      {confirm}
    </Page>
  );
}
