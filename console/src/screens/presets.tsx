// Presets: the list with each one's designated version, a preset's versions, and a new preset
// (or a new version of one) from a chat completions request body (POST /presets/{slug}/chat/completions).
import { useEffect, useState } from 'preact/hooks';
import { api, problem, type Problem } from '../api.ts';
import { Alert, Loading, Page, Text } from '../ui.tsx';

type Version = {
  id: string;
  version: number;
  system_prompt: string;
  config: Record<string, unknown>;
  created_at: string;
};
type Preset = {
  id: string;
  name: string;
  slug: string;
  description: string | null;
  designated_version_id: string;
  designated_version: Version;
  updated_at: string;
};

const TEMPLATE = JSON.stringify(
  {
    model: 'local/scripted',
    max_tokens: 1024,
    temperature: 0.7,
    messages: [{ role: 'system', content: 'You are a careful assistant.' }],
  },
  null,
  2,
);

function Versions({ preset }: { preset: Preset }) {
  const [versions, setVersions] = useState<Version[] | null>(null);
  const [error, setError] = useState<Problem | null>(null);
  useEffect(
    () =>
      void api<{ data: Version[] }>('GET', `/presets/${encodeURIComponent(preset.slug)}/versions`).then(
        (r) => setVersions(r.data),
        (e) => setError(problem(e)),
      ),
    [preset.designated_version_id],
  );
  if (error) return <Alert problem={error} />;
  if (!versions) return <Loading what="versions" />;
  return (
    <ol class="versions" reversed aria-label={`Versions of ${preset.slug}`}>
      {versions.map((v) => (
        <li key={v.id}>
          <strong>Version {v.version}</strong>
          {v.id === preset.designated_version_id && <span class="badge badge-running">designated</span>}
          <span class="muted"> {new Date(v.created_at).toLocaleString()}</span>
          {v.system_prompt && <p>System prompt: {v.system_prompt}</p>}
          <pre>{JSON.stringify(v.config, null, 2)}</pre>
        </li>
      ))}
    </ol>
  );
}

/** The slug is the screen's, so opening a preset's versions fills it in for a new version. */
function PresetForm({
  slug,
  setSlug,
  onSaved,
}: {
  slug: string;
  setSlug: (s: string) => void;
  onSaved: (slug: string) => void;
}) {
  const [body, setBody] = useState(TEMPLATE);
  const [error, setError] = useState<Problem | null>(null);
  const submit = async (e: Event) => {
    e.preventDefault();
    let parsed: unknown;
    try {
      parsed = JSON.parse(body);
    } catch (err) {
      return setError({
        status: 400,
        message: `not JSON: ${(err as Error).message}`,
        retryable: false,
        fields: { body: `This is not JSON: ${(err as Error).message}` },
      });
    }
    try {
      await api('POST', `/presets/${encodeURIComponent(slug.trim())}/chat/completions`, parsed);
      setError(null);
      onSaved(slug.trim());
    } catch (err) {
      setError(problem(err));
    }
  };
  // The server names fields of the body (`max_tokens: …`); they belong beside the body.
  const { slug: slugError, ...inBody } = error?.fields ?? {};
  const bodyError =
    Object.entries(inBody)
      .map(([k, v]) => (k === 'body' ? v : `${k}: ${v}`))
      .join('; ') || undefined;
  return (
    <form class="card" onSubmit={submit} aria-labelledby="preset-form">
      <h2 id="preset-form">New preset or version</h2>
      <Text
        label="Slug"
        name="slug"
        value={slug}
        onInput={setSlug}
        required
        error={slugError}
        hint="Letters, digits and . _ ~ -; an existing slug gets a new version."
      />
      <Text
        label="Chat completions request body (JSON)"
        name="body"
        value={body}
        onInput={setBody}
        multiline
        error={bodyError}
        hint="model, max_tokens, sampling settings and the system message are kept; other messages are ignored."
      />
      <Alert problem={error && !slugError && !bodyError ? error : null} />
      <button type="submit">Save preset</button>
    </form>
  );
}

export function Presets() {
  const [list, setList] = useState<Preset[] | null>(null);
  const [open, setOpen] = useState<string | null>(null);
  const [slug, setSlug] = useState('');
  const [error, setError] = useState<Problem | null>(null);
  // The list leaves out each preset's designated version, which one read per preset gives.
  const load = () =>
    api<{ data: Preset[] }>('GET', '/presets')
      .then((r) =>
        Promise.all(
          r.data.map((p) => api<{ data: Preset }>('GET', `/presets/${encodeURIComponent(p.slug)}`).then((d) => d.data)),
        ),
      )
      .then(setList, (e) => setError(problem(e)));
  useEffect(() => void load(), []);
  return (
    <Page title="Presets">
      <Alert problem={error} />
      <p class="hint">
        Use a preset as a model: <code>@preset/&lt;slug&gt;</code>. Its newest version is the designated one.
      </p>
      {!list ? (
        <Loading what="presets" />
      ) : list.length === 0 ? (
        <p>No presets yet.</p>
      ) : (
        <ul class="cards">
          {list.map((p) => (
            <li key={p.id} class="card" data-preset={p.slug}>
              <h2>
                <code>{p.slug}</code>
              </h2>
              <p>
                Designated: version {p.designated_version.version} · model{' '}
                <code>{String(p.designated_version.config.model ?? 'none')}</code>
              </p>
              <button
                type="button"
                aria-expanded={open === p.slug}
                onClick={() => {
                  setOpen(open === p.slug ? null : p.slug);
                  setSlug(p.slug);
                }}
              >
                {open === p.slug ? 'Hide versions' : 'Show versions'}
                <span class="visually-hidden"> of {p.slug}</span>
              </button>
              {open === p.slug && <Versions preset={p} />}
            </li>
          ))}
        </ul>
      )}
      <PresetForm
        slug={slug}
        setSlug={setSlug}
        onSaved={(slug) => {
          setOpen(slug);
          void load();
        }}
      />
    </Page>
  );
}
