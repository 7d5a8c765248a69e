// Keys and guardrails (docs/guides/keys-and-budgets.md): the account's keys with what each has
// spent against its limit, a new key's secret shown once, disable and delete; guardrails with
// their limits and rules, created, assigned to keys and deleted. Management key only.
import { useEffect, useState } from 'preact/hooks';
import { api, problem, type Problem } from '../api.ts';
import { Alert, Choice, Loading, Page, Text, useConfirm } from '../ui.tsx';

export type Key = {
  hash: string;
  name: string;
  label: string;
  disabled: boolean;
  limit: number | null;
  limit_remaining: number | null;
  limit_reset: 'daily' | 'weekly' | 'monthly' | null;
  usage: number;
  usage_daily: number;
  usage_weekly: number;
  usage_monthly: number;
};
export type Guardrail = {
  id: string;
  name: string;
  limit_usd: number | null;
  reset_interval: 'daily' | 'weekly' | 'monthly' | null;
  allowed_models: string[] | null;
  ignored_models: string[] | null;
  allowed_providers: string[] | null;
  ignored_providers: string[] | null;
  enforce_zdr: boolean;
};

const usd = (v: number) => `$${v.toFixed(v !== 0 && v < 1 ? 4 : 2)}`;
const RESETS: [string, string][] = [
  ['', 'never'],
  ['daily', 'daily'],
  ['weekly', 'weekly'],
  ['monthly', 'monthly'],
];

const PERIOD = { daily: 'today', weekly: 'this week', monthly: 'this month' } as const;

/** What a key has spent in its limit's period, and the words for it. */
export function spendOf(k: Key): { spent: number; words: string } {
  const spent = k.limit === null ? k.usage : k.limit - (k.limit_remaining ?? 0);
  if (k.limit === null) return { spent, words: `${usd(k.usage)} spent, no limit` };
  const period = k.limit_reset ? ` ${PERIOD[k.limit_reset]}` : '';
  return { spent, words: `${usd(spent)} of ${usd(k.limit)}${period}` };
}

function limitBody(limit: string, reset: string): { limit: number | null; limit_reset: string | null } {
  return { limit: limit.trim() === '' ? null : Number(limit), limit_reset: reset || null };
}

type LimitForm = { name: string; limit: string; reset: string };

/** The name, spending limit and reset of a new key or guardrail; `fields` are the API's names for
 * the limit and its reset, so the server's refusal shows beside the field it names. */
function LimitFields<F extends LimitForm>(o: {
  prefix: string;
  form: F;
  setForm: (f: F) => void;
  error: Problem | null;
  fields: { limit: string; reset: string };
}) {
  const { form, setForm } = o;
  return (
    <>
      <Text
        label="Name"
        name={`${o.prefix}-name`}
        value={form.name}
        onInput={(v) => setForm({ ...form, name: v })}
        required
        error={o.error?.fields.name}
      />
      <Text
        label="Spending limit (USD)"
        name={`${o.prefix}-limit`}
        type="number"
        value={form.limit}
        onInput={(v) => setForm({ ...form, limit: v })}
        hint="Empty: no limit."
        error={o.error?.fields[o.fields.limit]}
      />
      <Choice
        label="Resets"
        name={`${o.prefix}-reset`}
        value={form.reset}
        onChange={(v) => setForm({ ...form, reset: v })}
        options={RESETS}
        error={o.error?.fields[o.fields.reset]}
      />
    </>
  );
}

/** Runs an action of a row, then reloads the list; a refusal is shown above it. */
const actor =
  (load: () => Promise<unknown>, setError: (p: Problem | null) => void) => async (f: () => Promise<unknown>) => {
    try {
      await f();
      await load();
    } catch (err) {
      setError(problem(err));
    }
  };

export function Keys() {
  const [keys, setKeys] = useState<Key[] | null>(null);
  const [error, setError] = useState<Problem | null>(null);
  const [form, setForm] = useState({ name: '', limit: '', reset: '' });
  const [formError, setFormError] = useState<Problem | null>(null);
  const [secret, setSecret] = useState<string | null>(null);
  const [dialog, confirm] = useConfirm();
  const load = () =>
    api<{ data: Key[] }>('GET', '/keys?include_disabled=true').then(
      (r) => {
        setKeys(r.data);
        setError(null);
      },
      (e) => setError(problem(e)),
    );
  useEffect(() => void load(), []);
  const create = async (e: Event) => {
    e.preventDefault();
    try {
      const made = await api<{ key: string }>('POST', '/keys', {
        name: form.name,
        ...(form.limit.trim() || form.reset ? limitBody(form.limit, form.reset) : {}),
      });
      setSecret(made.key);
      setForm({ name: '', limit: '', reset: '' });
      setFormError(null);
      await load();
    } catch (err) {
      setFormError(problem(err));
    }
  };
  const act = actor(load, setError);
  return (
    <Page title="Keys">
      {dialog}
      <Alert problem={error} words={error?.status === 403 ? 'Keys need a management key.' : undefined} />
      <form onSubmit={create} aria-labelledby="new-key">
        <h2 id="new-key">New key</h2>
        <LimitFields
          prefix="key"
          form={form}
          setForm={setForm}
          error={formError}
          fields={{ limit: 'limit', reset: 'limit_reset' }}
        />
        <Alert problem={formError && !Object.keys(formError.fields).length ? formError : null} />
        <button type="submit" disabled={!form.name.trim()}>
          Create key
        </button>
      </form>
      {secret && (
        <div class="alert" role="status">
          <p>
            The new key, shown this once: <code>{secret}</code>
          </p>
          <button type="button" onClick={() => setSecret(null)}>
            I have stored it
          </button>
        </div>
      )}
      {!keys ? (
        !error && <Loading what="keys" />
      ) : (
        <div class="table-wrap">
          <table>
            <caption>Keys and their spend against their limits</caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Key</th>
                <th scope="col">Spend</th>
                <th scope="col">State</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {keys.map((k) => {
                const { spent, words } = spendOf(k);
                return (
                  <tr key={k.hash}>
                    <td>{k.name}</td>
                    <td>
                      <code>{k.label}</code>
                    </td>
                    <td>
                      {k.limit !== null && (
                        <meter
                          min={0}
                          max={k.limit || 1}
                          value={Math.min(spent, k.limit)}
                          aria-label={`${k.name} spend`}
                        >
                          {words}
                        </meter>
                      )}{' '}
                      {words}
                    </td>
                    <td>{k.disabled ? 'disabled' : 'active'}</td>
                    <td>
                      <button
                        type="button"
                        class="quiet"
                        onClick={() => act(() => api('PATCH', `/keys/${k.hash}`, { disabled: !k.disabled }))}
                      >
                        {k.disabled ? `Enable ${k.name}` : `Disable ${k.name}`}
                      </button>{' '}
                      <button
                        type="button"
                        class="danger"
                        onClick={async () => {
                          if (await confirm(`Delete the key “${k.name}”? Requests with it will be refused.`, 'Delete'))
                            await act(() => api('DELETE', `/keys/${k.hash}`));
                        }}
                      >
                        {`Delete ${k.name}`}
                      </button>
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
    </Page>
  );
}

const list = (xs: string[] | null) => (xs?.length ? xs.join(', ') : '');
const names = (v: string) =>
  v
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);

export function Guardrails() {
  const [rows, setRows] = useState<Guardrail[] | null>(null);
  const [keys, setKeys] = useState<Key[]>([]);
  const [error, setError] = useState<Problem | null>(null);
  const [form, setForm] = useState({ name: '', limit: '', reset: '', allowed: '' });
  const [formError, setFormError] = useState<Problem | null>(null);
  const [assign, setAssign] = useState<Record<string, string>>({});
  const [dialog, confirm] = useConfirm();
  const load = () =>
    Promise.all([
      api<{ data: Guardrail[] }>('GET', '/guardrails?limit=100'),
      api<{ data: Key[] }>('GET', '/keys'),
    ]).then(
      ([g, k]) => {
        setRows(g.data);
        setKeys(k.data);
        setError(null);
      },
      (e) => setError(problem(e)),
    );
  useEffect(() => void load(), []);
  const create = async (e: Event) => {
    e.preventDefault();
    try {
      const { limit, limit_reset } = limitBody(form.limit, form.reset);
      await api('POST', '/guardrails', {
        name: form.name,
        limit_usd: limit,
        reset_interval: limit_reset,
        allowed_models: form.allowed.trim() ? names(form.allowed) : null,
      });
      setForm({ name: '', limit: '', reset: '', allowed: '' });
      setFormError(null);
      await load();
    } catch (err) {
      setFormError(problem(err));
    }
  };
  const act = actor(load, setError);
  return (
    <Page title="Guardrails">
      {dialog}
      <Alert problem={error} words={error?.status === 403 ? 'Guardrails need a management key.' : undefined} />
      <form onSubmit={create} aria-labelledby="new-guardrail">
        <h2 id="new-guardrail">New guardrail</h2>
        <LimitFields
          prefix="g"
          form={form}
          setForm={setForm}
          error={formError}
          fields={{ limit: 'limit_usd', reset: 'reset_interval' }}
        />
        <Text
          label="Allowed models"
          name="g-allowed"
          value={form.allowed}
          onInput={(v) => setForm({ ...form, allowed: v })}
          hint="Comma-separated model slugs; empty: any model."
          error={formError?.fields.allowed_models}
        />
        <Alert problem={formError && !Object.keys(formError.fields).length ? formError : null} />
        <button type="submit" disabled={!form.name.trim()}>
          Create guardrail
        </button>
      </form>
      {!rows ? (
        !error && <Loading what="guardrails" />
      ) : (
        <div class="table-wrap">
          <table>
            <caption>Guardrails</caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Limit</th>
                <th scope="col">Rules</th>
                <th scope="col">Assign a key</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((g) => (
                <tr key={g.id}>
                  <td>{g.name}</td>
                  <td>
                    {g.limit_usd === null
                      ? 'none'
                      : `${usd(g.limit_usd)}${g.reset_interval ? `, resets ${g.reset_interval}` : ''}`}
                  </td>
                  <td>
                    {[
                      list(g.allowed_models) && `models: ${list(g.allowed_models)}`,
                      list(g.ignored_models) && `not: ${list(g.ignored_models)}`,
                      list(g.allowed_providers) && `providers: ${list(g.allowed_providers)}`,
                      list(g.ignored_providers) && `not: ${list(g.ignored_providers)}`,
                      g.enforce_zdr && 'ZDR only',
                    ]
                      .filter(Boolean)
                      .join('; ') || 'any model'}
                  </td>
                  <td>
                    <Choice
                      label={`Key for ${g.name}`}
                      name={`assign-${g.id}`}
                      value={assign[g.id] ?? ''}
                      onChange={(v) => setAssign({ ...assign, [g.id]: v })}
                      options={[['', 'choose a key'], ...keys.map((k): [string, string] => [k.hash, k.name])]}
                    />
                    <button
                      type="button"
                      disabled={!assign[g.id]}
                      onClick={() =>
                        act(() => api('POST', `/guardrails/${g.id}/assignments/keys`, { key_hashes: [assign[g.id]] }))
                      }
                    >
                      {`Assign to ${g.name}`}
                    </button>
                  </td>
                  <td>
                    <button
                      type="button"
                      class="danger"
                      onClick={async () => {
                        if (await confirm(`Delete the guardrail “${g.name}”? Its keys lose its limits.`, 'Delete'))
                          await act(() => api('DELETE', `/guardrails/${g.id}`));
                      }}
                    >
                      {`Delete ${g.name}`}
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </Page>
  );
}
