// Workspaces: the list, and one form to create a workspace or edit every field of one
// (docs/reference/api.md#workspaces); delete after a confirmation.
import { useEffect, useState } from 'preact/hooks';
import { api, problem, type Problem } from '../api.ts';
import { Alert, Check, Choice, Loading, Page, Text, useConfirm } from '../ui.tsx';

export type Workspace = {
  id: string;
  name: string;
  slug: string;
  description: string | null;
  default_text_model: string | null;
  default_image_model: string | null;
  default_provider_sort: string | null;
  disabled_server_tools: string[] | null;
  include_byok_in_budgets: boolean;
  io_logging_api_key_ids: string[] | null;
  io_logging_sampling_rate: number;
  is_data_discount_logging_enabled: boolean;
  is_observability_broadcast_enabled: boolean;
  is_observability_io_logging_enabled: boolean;
};

const SERVER_TOOLS = [
  'advisor',
  'apply_patch',
  'bash',
  'datetime',
  'fusion',
  'image_generation',
  'experimental__search_models',
  'shell',
  'subagent',
  'tool_search',
  'web_fetch',
  'web_search',
].map((t) => `service:${t}`);
const SORTS: [string, string][] = [
  ['', 'No preference'],
  ['price', 'Price'],
  ['throughput', 'Throughput'],
  ['latency', 'Latency'],
  ['exacto', 'Exacto'],
];
const FLAGS = [
  ['include_byok_in_budgets', 'Count your own provider keys in budgets'],
  ['is_data_discount_logging_enabled', 'Data discount logging'],
  ['is_observability_broadcast_enabled', 'Broadcast to observability destinations'],
  ['is_observability_io_logging_enabled', 'Log request and response bodies'],
] as const;

type Form = {
  name: string;
  slug: string;
  description: string;
  default_text_model: string;
  default_image_model: string;
  default_provider_sort: string;
  disabled_server_tools: string[];
  io_logging_api_key_ids: string;
  io_logging_sampling_rate: string;
} & Record<(typeof FLAGS)[number][0], boolean>;

const formOf = (w?: Workspace): Form => ({
  name: w?.name ?? '',
  slug: w?.slug ?? '',
  description: w?.description ?? '',
  default_text_model: w?.default_text_model ?? '',
  default_image_model: w?.default_image_model ?? '',
  default_provider_sort: w?.default_provider_sort ?? '',
  disabled_server_tools: w?.disabled_server_tools ?? [],
  io_logging_api_key_ids: (w?.io_logging_api_key_ids ?? []).join(', '),
  io_logging_sampling_rate: String(w?.io_logging_sampling_rate ?? 1),
  include_byok_in_budgets: w?.include_byok_in_budgets ?? false,
  is_data_discount_logging_enabled: w?.is_data_discount_logging_enabled ?? false,
  is_observability_broadcast_enabled: w?.is_observability_broadcast_enabled ?? false,
  is_observability_io_logging_enabled: w?.is_observability_io_logging_enabled ?? false,
});

/** Empty text is null (cleared); the sampling rate is sent as the number typed, for the server to judge. */
function bodyOf(f: Form) {
  const ids = f.io_logging_api_key_ids
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  return {
    name: f.name,
    slug: f.slug,
    description: f.description || null,
    default_text_model: f.default_text_model || null,
    default_image_model: f.default_image_model || null,
    default_provider_sort: f.default_provider_sort || null,
    disabled_server_tools: f.disabled_server_tools,
    io_logging_api_key_ids: ids.length ? ids : null,
    io_logging_sampling_rate: f.io_logging_sampling_rate.trim() === '' ? 1 : Number(f.io_logging_sampling_rate),
    ...Object.fromEntries(FLAGS.map(([k]) => [k, f[k]])),
  };
}

function WorkspaceForm({ editing, onDone }: { editing?: Workspace; onDone: () => void }) {
  const [form, setForm] = useState(formOf(editing));
  const [error, setError] = useState<Problem | null>(null);
  const set = (k: keyof Form) => (v: unknown) => setForm({ ...form, [k]: v });
  const submit = async (e: Event) => {
    e.preventDefault();
    setError(null);
    try {
      await api(editing ? 'PATCH' : 'POST', editing ? `/workspaces/${editing.id}` : '/workspaces', bodyOf(form));
      if (!editing) setForm(formOf());
      onDone();
    } catch (err) {
      setError(problem(err));
    }
  };
  const f = error?.fields ?? {};
  const tool = (t: string) => (on: boolean) =>
    set('disabled_server_tools')(
      on ? [...form.disabled_server_tools, t] : form.disabled_server_tools.filter((x) => x !== t),
    );
  const title = editing ? `Edit ${editing.name}` : 'New workspace';
  return (
    <form class="card" onSubmit={submit} aria-label={title}>
      <h2>{title}</h2>
      <Text label="Name" name="name" value={form.name} onInput={set('name')} required error={f.name} />
      <Text
        label="Slug"
        name="slug"
        value={form.slug}
        onInput={set('slug')}
        required
        error={f.slug}
        hint="Lowercase letters and digits in hyphen-separated groups, e.g. research-team."
      />
      <Text
        label="Description"
        name="description"
        value={form.description}
        onInput={set('description')}
        multiline
        error={f.description}
      />
      <Text
        label="Default text model"
        name="default_text_model"
        value={form.default_text_model}
        onInput={set('default_text_model')}
        error={f.default_text_model}
        placeholder="local/scripted"
      />
      <Text
        label="Default image model"
        name="default_image_model"
        value={form.default_image_model}
        onInput={set('default_image_model')}
        error={f.default_image_model}
      />
      <Choice
        label="Provider sort"
        name="default_provider_sort"
        value={form.default_provider_sort}
        onChange={set('default_provider_sort')}
        options={SORTS}
        error={f.default_provider_sort}
      />
      <fieldset>
        <legend>Disabled server tools</legend>
        {SERVER_TOOLS.map((t) => (
          <Check
            key={t}
            label={t}
            name={`tool-${t}`}
            checked={form.disabled_server_tools.includes(t)}
            onChange={tool(t)}
          />
        ))}
        {f.disabled_server_tools && <p class="field-error">{f.disabled_server_tools}</p>}
      </fieldset>
      <fieldset>
        <legend>Logging and observability</legend>
        {FLAGS.map(([k, label]) => (
          <Check key={k} label={label} name={k} checked={form[k]} onChange={set(k)} error={f[k]} />
        ))}
        <Text
          label="Body logging sampling rate"
          name="io_logging_sampling_rate"
          type="number"
          value={form.io_logging_sampling_rate}
          onInput={set('io_logging_sampling_rate')}
          error={f.io_logging_sampling_rate}
          hint="From 0.0001 to 1."
        />
        <Text
          label="Log bodies only for these API key ids"
          name="io_logging_api_key_ids"
          value={form.io_logging_api_key_ids}
          onInput={set('io_logging_api_key_ids')}
          error={f.io_logging_api_key_ids}
          hint="Comma-separated; empty means every key."
        />
      </fieldset>
      <Alert problem={error && !Object.keys(f).length ? error : null} />
      <div class="actions">
        <button type="submit">{editing ? 'Save changes' : 'Create workspace'}</button>
        {editing && (
          <button type="button" class="quiet" onClick={onDone}>
            Close
          </button>
        )}
      </div>
    </form>
  );
}

export function Workspaces() {
  const [list, setList] = useState<Workspace[] | null>(null);
  const [editing, setEditing] = useState<Workspace | null>(null);
  const [error, setError] = useState<Problem | null>(null);
  const [confirm, ask] = useConfirm();
  const load = () =>
    api<{ data: Workspace[] }>('GET', '/workspaces?limit=100').then(
      (r) => setList(r.data),
      (e) => setError(problem(e)),
    );
  useEffect(() => void load(), []);
  const remove = async (w: Workspace) => {
    if (
      !(await ask(
        `Delete the workspace “${w.name}”? Its presets and credentials go with it, and keys made for it are revoked.`,
        'Delete',
      ))
    )
      return;
    try {
      await api('DELETE', `/workspaces/${w.id}`);
      setError(null);
    } catch (e) {
      setError(problem(e));
    }
    await load();
  };
  return (
    <Page title="Workspaces">
      <Alert problem={error} />
      {!list ? (
        <Loading what="workspaces" />
      ) : (
        <ul class="cards">
          {list.map((w) => (
            <li key={w.id} class="card" data-workspace={w.slug}>
              <h2>
                {w.name} <code>{w.slug}</code>
              </h2>
              {w.description && <p>{w.description}</p>}
              <p class="muted">
                Default model: {w.default_text_model ?? 'none'} · sort: {w.default_provider_sort ?? 'none'}
              </p>
              <div class="actions">
                <button type="button" onClick={() => setEditing(w)}>
                  Edit<span class="visually-hidden"> {w.name}</span>
                </button>
                <button type="button" class="danger" onClick={() => remove(w)}>
                  Delete<span class="visually-hidden"> {w.name}</span>
                </button>
              </div>
            </li>
          ))}
        </ul>
      )}
      {editing ? (
        <WorkspaceForm
          key={editing.id}
          editing={editing}
          onDone={() => {
            setEditing(null);
            void load();
          }}
        />
      ) : (
        <WorkspaceForm onDone={load} />
      )}
      {confirm}
    </Page>
  );
}
