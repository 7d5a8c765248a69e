// An intern's files and repositories (docs/guides/files.md, docs/guides/repositories.md): browse
// its work folder, view a file, upload files into the folder shown, download a file or the
// folder (a tar stream); each repository's diff against its base, and a push to a new branch.
// Downloads are fetched with the key in the header and handed to the browser as a blob: the key
// never goes into a URL.
import { useEffect, useState } from 'preact/hooks';
import { api, problem, problemOf, request, type Problem } from '../api.ts';
import { Alert, Loading, Page, Text } from '../ui.tsx';
import { isListing } from '../wire.ts';

type Entry = {
  name: string;
  type: 'file' | 'directory' | 'symlink' | 'special';
  size: number | null;
  modified_at: number;
};
export type Listing = { path: string; entries: Entry[]; truncated: boolean };
type Repository = { id: string; url: string; ref: string; path: string; commit: string };

const filesPath = (path: string) =>
  path
    .split('/')
    .filter(Boolean)
    .map((p) => encodeURIComponent(p))
    .join('/');
const href = (internId: string, path: string) =>
  `#/interns/${encodeURIComponent(internId)}/files${path ? `/${filesPath(path)}` : ''}`;

/** Fetches a file or a folder's tar with the key and saves it under `name`. */
async function download(internId: string, path: string, name: string, tar: boolean) {
  const res = await request('GET', `/interns/${internId}/files/${filesPath(path)}${tar ? '?format=tar' : ''}`);
  if (!res.ok) throw new Error((await problemOf(res)).message);
  const url = URL.createObjectURL(await res.blob());
  const a = Object.assign(document.createElement('a'), { href: url, download: name });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

function Viewer({ internId, path }: { internId: string; path: string }) {
  const [text, setText] = useState<string | null>(null);
  const [error, setError] = useState<Problem | null>(null);
  useEffect(() => {
    void request('GET', `/interns/${internId}/files/${filesPath(path)}`).then(async (res) => {
      if (!res.ok) return setError(await problemOf(res));
      const bytes = new Uint8Array(await res.arrayBuffer());
      try {
        setText(new TextDecoder('utf-8', { fatal: true }).decode(bytes.subarray(0, 200_000)));
      } catch {
        setText(`(${bytes.length} bytes of binary data: download it to open it)`);
      }
    });
  }, [path]);
  return (
    <section class="card" aria-labelledby="file-view">
      <h2 id="file-view">{path}</h2>
      <Alert problem={error} />
      {text === null && !error ? <Loading what="the file" /> : <pre class="file">{text}</pre>}
      <button type="button" onClick={() => download(internId, path, path.split('/').at(-1)!, false)}>
        Download<span class="visually-hidden"> {path}</span>
      </button>
    </section>
  );
}

function Repositories({ internId }: { internId: string }) {
  const [repos, setRepos] = useState<Repository[] | null>(null);
  const [diffs, setDiffs] = useState<Record<string, string>>({});
  const [branch, setBranch] = useState<Record<string, string>>({});
  const [pushed, setPushed] = useState<Record<string, string>>({});
  const [error, setError] = useState<Problem | null>(null);
  const [busy, setBusy] = useState('');
  useEffect(() => {
    void api<{ data: Repository[] }>('GET', `/interns/${internId}/repositories`).then(
      (r) => setRepos(r.data),
      (e) => setError(problem(e)),
    );
  }, []);
  const run = async (repo: Repository, what: 'diff' | 'push') => {
    setBusy(`${what}:${repo.id}`);
    setError(null);
    try {
      if (what === 'diff') {
        const d = await api<{ diff: string; commit: string }>(
          'GET',
          `/interns/${internId}/repositories/${repo.id}/diff`,
        );
        setDiffs({ ...diffs, [repo.id]: d.diff || 'No committed changes since the base commit.' });
      } else {
        const b = branch[repo.id]?.trim();
        const p = await api<{ branch: string; commit: string }>(
          'POST',
          `/interns/${internId}/repositories/${repo.id}/push`,
          b ? { branch: b } : {},
        );
        setPushed({ ...pushed, [repo.id]: `Pushed ${p.commit.slice(0, 12)} to the new branch ${p.branch}.` });
      }
    } catch (e) {
      setError(problem(e));
    } finally {
      setBusy('');
    }
  };
  if (!repos) return error ? <Alert problem={error} /> : <Loading what="repositories" />;
  if (!repos.length) return null;
  return (
    <section class="card" aria-labelledby="repositories">
      <h2 id="repositories">Repositories</h2>
      <Alert problem={error} />
      {repos.map((r) => (
        <div key={r.id} data-repository={r.path}>
          <h3>
            {r.path}{' '}
            <small>
              ({r.url}, {r.ref} at {r.commit.slice(0, 12)})
            </small>
          </h3>
          <div class="actions">
            <button type="button" onClick={() => run(r, 'diff')} disabled={busy !== ''}>
              Show diff<span class="visually-hidden"> of {r.path}</span>
            </button>
            <Text
              label={`New branch for ${r.path}`}
              name={`branch-${r.id}`}
              value={branch[r.id] ?? ''}
              onInput={(v) => setBranch({ ...branch, [r.id]: v })}
              hint="Empty: cohort/<intern name>-<time>."
            />
            <button type="button" onClick={() => run(r, 'push')} disabled={busy !== ''}>
              Push<span class="visually-hidden"> {r.path}</span>
            </button>
          </div>
          {pushed[r.id] && <p role="status">{pushed[r.id]}</p>}
          {diffs[r.id] !== undefined && (
            <figure aria-label={`Diff of ${r.path}`}>
              <pre class="file">{diffs[r.id]}</pre>
            </figure>
          )}
        </div>
      ))}
    </section>
  );
}

export function Files({ internId, path }: { internId: string; path: string }) {
  const [listing, setListing] = useState<Listing | null>(null);
  const [isFile, setIsFile] = useState(false);
  const [error, setError] = useState<Problem | null>(null);
  const [note, setNote] = useState('');
  const load = async () => {
    setError(null);
    const res = await request('GET', `/interns/${internId}/files/${filesPath(path)}`);
    if (!res.ok) return setError(await problemOf(res));
    if (res.headers.get('content-type')?.startsWith('application/json')) {
      setIsFile(false);
      const listing: unknown = await res.json();
      if (isListing(listing)) setListing(listing);
      else
        setError({
          status: 502,
          message: 'the gateway answered with a listing the console cannot read',
          retryable: false,
          fields: {},
        });
    } else setIsFile(true);
  };
  useEffect(() => void load(), [path]);
  const upload = async (files: FileList | null) => {
    if (!files?.length) return;
    setError(null);
    for (const file of [...files]) {
      const target = [path, file.name].filter(Boolean).join('/');
      const res = await request('PUT', `/interns/${internId}/files/${filesPath(target)}`, undefined, { raw: file });
      if (!res.ok) return setError(await problemOf(res));
    }
    setNote(`Uploaded ${files.length} file${files.length === 1 ? '' : 's'}.`);
    await load();
  };
  const parts = path.split('/').filter(Boolean);
  return (
    <Page title="Files">
      <nav aria-label="Folder">
        <a href={href(internId, '')}>work</a>
        {parts.map((p, i) => (
          <span key={i}>
            {' / '}
            <a href={href(internId, parts.slice(0, i + 1).join('/'))}>{p}</a>
          </span>
        ))}
      </nav>
      <Alert problem={error} onRetry={load} />
      {isFile ? (
        <Viewer internId={internId} path={path} />
      ) : !listing ? (
        !error && <Loading what="the folder" />
      ) : (
        <>
          <div class="table-wrap">
            <table class="stack">
              <caption class="visually-hidden">Files in {path || 'the work folder'}</caption>
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Type</th>
                  <th scope="col">Size</th>
                </tr>
              </thead>
              <tbody>
                {listing.entries.map((e) => (
                  <tr key={e.name} data-entry={e.name}>
                    <th scope="row">
                      {e.type === 'file' || e.type === 'directory' ? (
                        <a href={href(internId, [path, e.name].filter(Boolean).join('/'))}>{e.name}</a>
                      ) : (
                        e.name
                      )}
                    </th>
                    <td data-label="Type">{e.type}</td>
                    <td data-label="Size">{e.size ?? ''}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          {listing.truncated && <p>Only the first entries are listed.</p>}
          <div class="actions">
            <label>
              Upload files here
              <input type="file" multiple onChange={(e) => upload((e.target as HTMLInputElement).files)} />
            </label>
            <button
              type="button"
              onClick={() =>
                download(internId, path, `${parts.at(-1) ?? 'work'}.tar`, true).catch((e: Error) =>
                  setError({ status: 0, message: e.message, retryable: false, fields: {} }),
                )
              }
            >
              Download this folder (tar)
            </button>
          </div>
          {note && <p role="status">{note}</p>}
        </>
      )}
      {!path && <Repositories internId={internId} />}
    </Page>
  );
}
