// Round trips on real stores: an install filled through the API (workspaces, preset versions, a
// BYOK credential, keys, an intern with a session) is backed up by the CLI while its gateway
// serves, restored into a fresh data dir and into a fresh PostgreSQL schema, and checked record by
// record: old keys authenticate, the credential still reaches the upstream, the intern continues
// its session. Bad archives and targets are refused with their message and nothing written.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { create as tarCreate, extract as tarExtract } from 'tar';
import { startInternFixture, type InternFixture } from '../../test/helpers/interns.ts';
import { postgresUrl } from '../../test/helpers/gateway.ts';
import { startFakeUpstream, type FakeUpstream } from '../../test/helpers/fake-upstream.ts';
import { upstreamEnv } from '../../test/helpers/inference-fixtures.ts';
import { noSandbox } from '../../test/helpers/sandbox.ts';
import { runCohort as cohort } from '../../test/helpers/cli.ts';

const BYOK_KEY = 'sk-byok-survives-the-move-0123456789';

const say = (text: string, session: string) => ({
  stream: true,
  session_id: session,
  messages: [{ role: 'user', content: `/say ${text}` }],
});
const contentOf = (r: { chunks: any[] }) => r.chunks.map((c) => c.choices[0]?.delta?.content ?? '').join('');
const promptTokens = (r: { chunks: any[] }) => r.chunks.at(-1).usage.prompt_tokens as number;
/** What a restore must bring back, read through the API. */
async function records(f: InternFixture) {
  const strip = (i: any) => ({
    ...i,
    status: undefined,
    hostname: undefined,
    progress: undefined,
    updated_at: undefined,
  });
  return {
    workspaces: (await f.gw.call('GET', '/workspaces')).body,
    interns: (await f.gw.call('GET', '/interns')).body.data.map(strip),
  };
}

describe('backup and restore', { skip: noSandbox }, () => {
  let up: FakeUpstream;
  let src: InternFixture;
  let archive: string;
  let work: string;
  let intern: string;
  let before_: Awaited<ReturnType<typeof records>>;
  let workspaceKey: string;

  before(async () => {
    up = await startFakeUpstream();
    work = mkdtempSync(join(tmpdir(), 'cohort-backup-test-'));
    archive = join(work, 'backup.tar.gz');
    src = await startInternFixture({ onDisk: true, env: upstreamEnv(up) });
    const ws = await src.gw.call('POST', '/workspaces', {
      body: { name: 'Moving', slug: 'moving', default_text_model: 'openai/gpt-4o' },
    });
    assert.equal(ws.status, 201);
    for (const max of [100, 200]) {
      const p = await src.gw.call('POST', '/presets/mover/messages', {
        body: { model: 'openai/gpt-4o', max_tokens: max, system: 'Be brief.', messages: [] },
      });
      assert.ok(p.status === 200 || p.status === 201, JSON.stringify(p.body));
    }
    const cred = await src.gw.call('POST', '/byok', {
      body: { provider: 'openai', key: BYOK_KEY, workspace_id: ws.body.data.id },
    });
    assert.equal(cred.status, 201);
    const { createKey } = await import('../gateway/access/identity-store.ts');
    workspaceKey = (
      await createKey(src.gw.ctx.store.db, {
        orgId: src.gw.keys.org_id,
        creatorUserId: src.gw.keys.user_id,
        kind: 'standard',
        workspaceId: ws.body.data.id,
      })
    ).raw;
    intern = await src.intern('keeper');
    assert.equal(contentOf(await src.chat(intern, say('remember me', 'kept'))), 'remember me');
    before_ = await records(src);
  });
  after(async () => {
    await src.close();
    await up.close();
    rmSync(work, { recursive: true, force: true });
  });

  test('cohort backup while the gateway serves: the running gateway writes it; a turn in flight is unharmed', async () => {
    const slow = src.chat(intern, {
      stream: true,
      session_id: 'during',
      messages: [{ role: 'user', content: '/say during\n/sleep 800\n/say backup' }],
    });
    // What a run cut off (a crash, a full disk) left behind is replaced by the next run to FILE.
    writeFileSync(`${archive}.partial`, 'a run cut off');
    const r = await cohort(['backup', archive, '--data-dir', src.gw.dataDir]);
    assert.equal(r.code, 0, r.err);
    assert.equal(existsSync(`${archive}.partial`), false);
    const summary = JSON.parse(r.out);
    assert.equal(summary.interns, 1);
    assert.ok(summary.intern_files >= 2, "the intern's session files are in it");
    assert.deepEqual(
      [
        summary.counts.workspaces,
        summary.counts.preset_versions,
        summary.counts.byok_credentials,
        summary.counts.interns,
      ],
      [2, 2, 1, 1],
    );
    assert.match(summary.master_key_fingerprint, /^sha256:[0-9a-f]{32}$/);
    assert.equal(contentOf(await slow), 'during\nbackup');
    assert.equal(statSync(archive).mode & 0o777, 0o600);
    // The master key is nowhere in the archive.
    const unpacked = join(work, 'unpacked');
    mkdirSync(unpacked);
    await tarExtract({ file: archive, cwd: unpacked });
    const key = readFileSync(join(src.gw.dataDir, 'master.key'), 'utf8').trim();
    const everything = readdirSync(unpacked, { recursive: true, withFileTypes: true })
      .filter((e) => e.isFile())
      .map((e) => readFileSync(join(e.parentPath, e.name), 'latin1'))
      .join('');
    assert.equal(everything.includes(key), false);
    assert.equal(everything.includes(BYOK_KEY), false, 'the credential stays sealed');
  });

  test('restore into a fresh data dir: every record, old keys, the sealed credential, the intern and its session', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cohort-restored-'));
    copyFileSync(join(src.gw.dataDir, 'master.key'), join(dir, 'master.key'));
    const r = await cohort(['restore', archive, '--data-dir', dir]);
    assert.equal(r.code, 0, r.err);
    assert.equal(JSON.parse(r.out).restored.counts.interns, 1);
    const back = await startInternFixture({ onDisk: true, dataDir: dir, env: upstreamEnv(up), keys: src.gw.keys });
    try {
      await back.gw.ctx.interns.idle();
      assert.deepEqual(await records(back), before_);
      assert.equal(
        (await back.gw.call('GET', `/interns/${intern}`)).body.status,
        'running',
        'it was running, so it starts again on its files',
      );
      const from = up.received.length;
      const model = await back.gw.call('POST', '/chat/completions', {
        key: workspaceKey,
        body: { model: 'openai/gpt-4o', messages: [{ role: 'user', content: '/say sealed' }] },
      });
      assert.equal(model.status, 200, JSON.stringify(model.body));
      assert.equal(up.received[from]!.key, BYOK_KEY);
      const kept = await back.chat(intern, say('again', 'kept'));
      const fresh = await back.chat(intern, say('again', 'new-here'));
      assert.equal(contentOf(kept), 'again');
      assert.ok(
        promptTokens(kept) > promptTokens(fresh),
        `the session's history came along (${promptTokens(kept)} > ${promptTokens(fresh)})`,
      );
    } finally {
      await back.close();
    }
  });

  /** A fresh PostgreSQL schema and a data dir holding the source's master key, for `fn`; the schema is dropped after. */
  async function freshSchema(fn: (schema: string, dir: string) => Promise<void>) {
    const schema = `t_${randomBytes(6).toString('hex')}`;
    const dir = mkdtempSync(join(tmpdir(), 'cohort-pg-target-'));
    copyFileSync(join(src.gw.dataDir, 'master.key'), join(dir, 'master.key'));
    try {
      await fn(schema, dir);
    } finally {
      const c = new pg.Client({ connectionString: postgresUrl });
      await c.connect();
      await c.query(`drop schema if exists ${schema} cascade`);
      await c.end();
    }
  }

  test(
    'restore into a fresh PostgreSQL schema, then a gateway on it',
    { skip: postgresUrl ? false : 'DATABASE_URL is not set' },
    () =>
      freshSchema(async (schema, dir) => {
        const r = await cohort(['restore', archive, '--data-dir', dir], {
          DATABASE_URL: postgresUrl!,
          COHORT_PG_SCHEMA: schema,
        });
        assert.equal(r.code, 0, r.err);
        const back = await startInternFixture({
          dataDir: dir,
          pgSchema: schema,
          env: upstreamEnv(up),
          keys: src.gw.keys,
        });
        try {
          await back.gw.ctx.interns.idle();
          const management = { headers: { authorization: `Bearer ${src.gw.keys.management_key}` } };
          const list = await fetch(`${back.gw.url}/workspaces`, management).then((x) => x.json());
          assert.deepEqual(list, before_.workspaces);
          const model = await back.gw.call('POST', '/chat/completions', {
            key: workspaceKey,
            body: { model: 'openai/gpt-4o', messages: [{ role: 'user', content: '/say pg' }] },
          });
          assert.equal(model.status, 200);
        } finally {
          await back.close();
        }
      }),
  );

  test(
    'cohort migrate --to: the embedded store moves into PostgreSQL, counts checked; a second move into the same schema is refused',
    { skip: postgresUrl ? false : 'DATABASE_URL is not set' },
    () =>
      freshSchema(async (schema, dir) => {
        assert.equal((await cohort(['restore', archive, '--data-dir', dir])).code, 0);
        const moved = await cohort(['migrate', '--to', postgresUrl!, '--data-dir', dir], { COHORT_PG_SCHEMA: schema });
        assert.equal(moved.code, 0, moved.err);
        const out = JSON.parse(moved.out);
        assert.deepEqual(
          [out.migrated.counts.workspaces, out.migrated.counts.byok_credentials, out.migrated.counts.interns],
          [2, 1, 1],
        );
        assert.match(out.next, /^start the gateway with DATABASE_URL=postgres/);
        const again = await cohort(['migrate', '--to', postgresUrl!, '--data-dir', dir], { COHORT_PG_SCHEMA: schema });
        assert.equal(again.code, 1);
        assert.match(
          again.err,
          /^cohort: the target store is not empty \(\d+ rows in organizations\); restore into an empty data dir or database\n$/,
        );
        const back = await startInternFixture({
          dataDir: dir,
          pgSchema: schema,
          env: upstreamEnv(up),
          keys: src.gw.keys,
        });
        try {
          await back.gw.ctx.interns.idle();
          assert.deepEqual(await records(back), before_);
          const from = up.received.length;
          assert.equal(
            (
              await back.gw.call('POST', '/chat/completions', {
                key: workspaceKey,
                body: { model: 'openai/gpt-4o', messages: [{ role: 'user', content: '/say moved' }] },
              })
            ).status,
            200,
          );
          assert.equal(up.received[from]!.key, BYOK_KEY);
          assert.equal(
            contentOf(await back.chat(intern, say('moved', 'kept'))),
            'moved',
            'the intern came back on its files in the same data dir',
          );
        } finally {
          await back.close();
        }
      }),
  );

  /** A restore that must be refused with `message`, leaving `dir` as it was. */
  async function refused(file: string, message: RegExp, prepare: (dir: string) => void = () => {}) {
    const dir = mkdtempSync(join(tmpdir(), 'cohort-refused-'));
    try {
      prepare(dir);
      const listing = readdirSync(dir).sort();
      const r = await cohort(['restore', file, '--data-dir', dir]);
      assert.equal(r.code, 1, r.out);
      assert.match(r.err, message);
      assert.deepEqual(readdirSync(dir).sort(), listing, 'nothing written');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  const withKey = (dir: string) => copyFileSync(join(src.gw.dataDir, 'master.key'), join(dir, 'master.key'));

  test('refused: a truncated archive, a wrong master key, no master key, an archive from a future version', async () => {
    const truncated = join(work, 'truncated.tar.gz');
    writeFileSync(truncated, readFileSync(archive).subarray(0, Math.floor(statSync(archive).size / 2)));
    await refused(truncated, /^cohort: the archive is truncated or corrupted/, withKey);
    await refused(
      archive,
      /^cohort: wrong master key: the backup needs sha256:[0-9a-f]{32}, this installation has sha256:[0-9a-f]{32}\n$/,
      (d) => writeFileSync(join(d, 'master.key'), randomBytes(32).toString('hex')),
    );
    await refused(
      archive,
      /^cohort: the backup's secrets are sealed under the master key sha256:[0-9a-f]{32}: put that key in the data dir \(master.key\) or COHORT_MASTER_KEY\n$/,
    );
    const future = join(work, 'future.tar.gz');
    const unpacked = mkdtempSync(join(work, 'future-'));
    await tarExtract({ file: archive, cwd: unpacked });
    const m = JSON.parse(readFileSync(join(unpacked, 'manifest.json'), 'utf8'));
    writeFileSync(join(unpacked, 'manifest.json'), JSON.stringify({ ...m, migration: '9999_from_the_future.sql' }));
    await tarCreate({ gzip: true, file: future, cwd: unpacked }, readdirSync(unpacked));
    await refused(
      future,
      /^cohort: the backup was made by a newer cohort \(its store is at migration 9999_from_the_future.sql; this one knows up to \d{4}_[a-z_]+\.sql\); upgrade cohort first\n$/,
      withKey,
    );
    const tampered = join(work, 'tampered.tar.gz');
    appendTo(join(unpacked, 'tables', 'workspaces.jsonl'));
    writeFileSync(join(unpacked, 'manifest.json'), JSON.stringify(m));
    await tarCreate({ gzip: true, file: tampered, cwd: unpacked }, readdirSync(unpacked));
    await refused(
      tampered,
      /^cohort: the archive is corrupted: tables\/workspaces.jsonl does not match its checksum\n$/,
      withKey,
    );
  });

  test('refused: a target that is not empty, and a backup file that exists already', async () => {
    const r = await cohort(['restore', archive, '--data-dir', src.gw.dataDir]);
    assert.equal(r.code, 1);
    assert.match(
      r.err,
      /^cohort: the target data dir already has interns \(.*\/interns\); restore into an empty data dir\n$/,
    );
    const again = await cohort(['backup', archive, '--data-dir', src.gw.dataDir]);
    assert.equal(again.code, 1);
    assert.equal(again.err, `cohort: ${archive} exists; name a new file\n`);
    assert.equal(existsSync(`${archive}.partial`), false);
  });
});

function appendTo(file: string) {
  writeFileSync(file, readFileSync(file, 'utf8') + '{"id":"00000000-0000-4000-8000-000000000000"}\n');
}
