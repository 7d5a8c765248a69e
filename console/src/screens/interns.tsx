// Interns: the list with status and provisioning progress (polled while one is changing), the
// create form, and provision, suspend and delete (after a confirmation).
import { useEffect, useState } from 'preact/hooks';
import { api, problem, type Problem } from '../api.ts';
import type { Access } from '../app.tsx';
import { Alert, Badge, Check, Choice, Loading, Page, Text, useConfirm } from '../ui.tsx';

export type Intern = {
  id: string;
  name: string;
  model: string | null;
  /** What its requests run on now: its model, else its workspace's default (docs/guides/interns.md). */
  effective_model: string;
  agent: string;
  workspace_id: string;
  status: string;
  progress: { step_label: string; step_number: number; total_steps: number } | null;
  last_failure_message: string | null;
  created_at: string;
};

const CHANGING = new Set(['provisioning', 'destroying']);

/** Models a request may name now, and the presets as `@preset/<slug>` where the key may list them. */
function useModelChoices(management: boolean) {
  const [models, setModels] = useState<string[]>([]);
  useEffect(() => {
    void api<{ data: { id: string }[] }>('GET', '/models').then(
      (r) => setModels((m) => [...r.data.map((x) => x.id), ...m]),
      () => {},
    );
    if (management)
      void api<{ data: { slug: string }[] }>('GET', '/presets').then(
        (r) => setModels((m) => [...m, ...r.data.map((p) => `@preset/${p.slug}`)]),
        () => {},
      );
  }, []);
  return models;
}

function CreateIntern({ access, onCreated }: { access: Access; onCreated: () => void }) {
  const models = useModelChoices(access.management);
  const empty = { name: '', model: '', agent: access.agents[0]?.id ?? '', instructions: '', provision: true };
  const [form, setForm] = useState(empty);
  const [error, setError] = useState<Problem | null>(null);
  const [busy, setBusy] = useState(false);
  const set = (k: keyof typeof form) => (v: string | boolean) => setForm({ ...form, [k]: v });
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      await api('POST', '/interns', {
        name: form.name,
        ...(form.model.trim() ? { model: form.model.trim() } : {}),
        ...(access.agents.length > 1 ? { agent: form.agent } : {}),
        ...(form.instructions.trim() ? { instructions: form.instructions } : {}),
        provision: form.provision,
      });
      setForm(empty);
      onCreated();
    } catch (err) {
      setError(problem(err));
    } finally {
      setBusy(false);
    }
  };
  const f = error?.fields ?? {};
  return (
    <form onSubmit={submit} class="card" aria-labelledby="create-intern">
      <h2 id="create-intern">New intern</h2>
      <Text label="Name" name="name" value={form.name} onInput={set('name')} required error={f.name} />
      <Text
        label="Model or preset"
        name="model"
        value={form.model}
        onInput={set('model')}
        list="model-choices"
        error={f.model}
        hint="Empty: the workspace's default text model. A preset is @preset/<slug>."
      />
      <datalist id="model-choices">
        {models.map((m) => (
          <option key={m} value={m} />
        ))}
      </datalist>
      {access.agents.length > 1 && (
        <Choice
          label="Agent"
          name="agent"
          value={form.agent}
          onChange={set('agent')}
          options={access.agents.map((a) => [a.id, `${a.name} — ${a.description}`])}
          error={f.agent}
        />
      )}
      <Text
        label="Instructions"
        name="instructions"
        value={form.instructions}
        onInput={set('instructions')}
        multiline
        error={f.instructions}
        hint="Standing instructions: the agent's system prompt."
      />
      <Check label="Provision it now" name="provision" checked={form.provision} onChange={set('provision')} />
      <Alert problem={error && !Object.keys(f).length ? error : null} />
      <button type="submit" disabled={busy}>
        {busy ? 'Creating…' : 'Create intern'}
      </button>
    </form>
  );
}

export function Interns({ access }: { access: Access }) {
  const [interns, setInterns] = useState<Intern[] | null>(null);
  const [error, setError] = useState<Problem | null>(null);
  const [confirm, ask] = useConfirm();
  const load = () =>
    api<{ data: Intern[] }>('GET', '/interns?limit=500').then(
      (r) => {
        setInterns(r.data);
        setError(null);
      },
      (e) => setError(problem(e)),
    );
  useEffect(() => void load(), []);
  const changing = interns?.some((i) => CHANGING.has(i.status));
  useEffect(() => {
    if (!changing) return;
    const t = setInterval(load, 1000);
    return () => clearInterval(t);
  }, [changing]);

  const act = async (intern: Intern, what: 'provision' | 'suspend' | 'delete') => {
    if (
      what === 'delete' &&
      !(await ask(
        `Delete the intern “${intern.name}”? Its sessions and files are removed and cannot be recovered.`,
        'Delete',
      ))
    )
      return;
    try {
      await api(
        what === 'delete' ? 'DELETE' : 'POST',
        what === 'delete' ? `/interns/${intern.id}` : `/interns/${intern.id}/${what}`,
      );
    } catch (e) {
      setError(problem(e));
    }
    await load();
  };

  return (
    <Page title="Interns">
      <Alert problem={error} onRetry={load} />
      {!interns ? (
        <Loading what="interns" />
      ) : interns.length === 0 ? (
        <p>No interns yet. Create one below.</p>
      ) : (
        <div class="table-wrap">
          <table class="stack">
            <caption class="visually-hidden">Interns, newest first</caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Status</th>
                <th scope="col">Model</th>
                <th scope="col">Agent</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {interns.map((i) => (
                <tr key={i.id} data-intern={i.name}>
                  <th scope="row">
                    <a href={`#/interns/${encodeURIComponent(i.id)}`}>{i.name}</a>
                  </th>
                  <td data-label="Status">
                    <Badge status={i.status} />
                    {i.progress && CHANGING.has(i.status) && (
                      <div class="progress">
                        <progress
                          max={i.progress.total_steps}
                          value={i.progress.step_number}
                          aria-label={`${i.name}: ${i.progress.step_label}`}
                        />
                        <span>
                          {i.progress.step_label} ({i.progress.step_number}/{i.progress.total_steps})
                        </span>
                      </div>
                    )}
                    {i.last_failure_message && <p class="field-error">{i.last_failure_message}</p>}
                  </td>
                  <td data-label="Model">
                    <code>{i.effective_model}</code>
                    {!i.model && <span class="muted"> (workspace default)</span>}
                  </td>
                  <td data-label="Agent">{i.agent}</td>
                  <td>
                    <div class="actions">
                      <a class="button" href={`#/interns/${encodeURIComponent(i.id)}`}>
                        Chat<span class="visually-hidden"> with {i.name}</span>
                      </a>
                      <a class="button" href={`#/interns/${encodeURIComponent(i.id)}/files`}>
                        Files<span class="visually-hidden"> of {i.name}</span>
                      </a>
                      <button type="button" onClick={() => act(i, 'provision')} disabled={CHANGING.has(i.status)}>
                        {i.status === 'running' ? 'Restart' : 'Provision'}
                        <span class="visually-hidden"> {i.name}</span>
                      </button>
                      <button type="button" onClick={() => act(i, 'suspend')} disabled={i.status !== 'running'}>
                        Suspend<span class="visually-hidden"> {i.name}</span>
                      </button>
                      <button
                        type="button"
                        class="danger"
                        onClick={() => act(i, 'delete')}
                        disabled={i.status === 'destroying'}
                      >
                        Delete<span class="visually-hidden"> {i.name}</span>
                      </button>
                    </div>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <CreateIntern access={access} onCreated={load} />
      {confirm}
    </Page>
  );
}
