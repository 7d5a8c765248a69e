// The real CLI, spawned as a child process: the whole administration story on PostgreSQL (on
// PGlite when DATABASE_URL is unset) with exact JSON outputs, secrets printed once, and keys it
// creates, revokes, grants or orphans taking effect on a gateway on the same store; and on a PGlite
// data dir, the CLI and the gateway taking turns. Argument checking runs in process (it never
// opens a store), with one spawn showing the exit code reaches the shell.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { hashKey, maskSecret } from '../gateway/crypto/keys.ts';
import type { Gateway } from '../gateway/server.ts';
import { ADMIN_CREATOR } from '../gateway/access/identity.ts';
import { postgresUrl } from '../../test/helpers/gateway.ts';
import { main } from './main.ts';
import { get, sharedStore, type SharedStore } from '../../test/helpers/cli.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

/** Checks a dynamic field's format and returns it, so the rest of the object compares exactly. */
function like(value: unknown, re: RegExp): string {
  assert.match(String(value), re);
  return value as string;
}

describe('cohort CLI arguments', () => {
  const s = sharedStore('pglite');
  after(() => s.cleanup());
  /** main() in this process, on the temp data dir, so that anything it wrote would show there. */
  async function inProcess(argv: string[]) {
    process.env.COHORT_DATA_DIR = s.dataDir;
    let stdout = '';
    let stderr = '';
    const code = await main(argv, { out: (t) => (stdout += t + '\n'), err: (t) => (stderr += t + '\n') });
    return { code, stdout, stderr };
  }

  test('bad arguments: a clear message, exit 2, no stack trace, nothing written', async () => {
    const cases: [string[], string][] = [
      [[], 'cohort: a command is required\nRun "cohort help" for the commands.\n'],
      [['bogus', 'thing'], 'cohort: unknown command "bogus thing"\nRun "cohort help" for the commands.\n'],
      [['org', 'create'], 'cohort: expected NAME\nusage: cohort org create NAME [--interns]\n'],
      [['key', 'revoke', 'nope'], 'cohort: KEY_ID must be a UUID, got "nope"\nusage: cohort key revoke KEY_ID\n'],
      [
        ['programme', 'grant'],
        'cohort: give exactly one of --user ID or --org ID\nusage: cohort programme grant (--user ID | --org ID)\n',
      ],
      [
        ['key', 'create', '--org', '7b0c9b6e-2a53-4f4e-9d55-8f7f0a3b2c11', '--user', 'u', '--acts-as', 'robot'],
        'cohort: --acts-as must be user or organization\nusage: cohort key create --org ORG_ID --user USER_ID [--management] [--acts-as user|organization] [--workspace ID_OR_SLUG] [--name NAME]\n',
      ],
      [['org', 'list', '--colour'], 'cohort: unknown option --colour\nusage: cohort org list\n'],
      [
        ['key', 'list', '--org'],
        "cohort: Option '--org <value>' argument missing\nusage: cohort key list [--org ORG_ID]\n",
      ],
    ];
    for (const [args, stderr] of cases) {
      const r = await inProcess(args);
      assert.deepEqual(
        { code: r.code, stderr: r.stderr, stdout: r.stdout },
        { code: 2, stderr, stdout: '' },
        args.join(' '),
      );
    }
    assert.deepEqual(readdirSync(s.dataDir), [], 'no store was opened');
    const spawned = await s.cli(['key', 'revoke', 'nope']);
    assert.deepEqual([spawned.code, spawned.stderr, spawned.stdout], [2, cases[3]![1], '']);
  });

  test('help names every command', async () => {
    const r = await inProcess(['help']);
    assert.equal(r.code, 0);
    for (const c of ['start', 'daemon', 'agent', 'chat', 'cohort org create NAME', 'cohort key list [--org ORG_ID]'])
      assert.ok(r.stdout.includes(c), c);
  });
});

const full = postgresUrl ? 'postgres' : 'pglite';
describe(`cohort CLI on ${full}`, () => {
  let s: SharedStore;
  before(() => {
    s = sharedStore(full);
  });
  after(() => s.cleanup());

  /** The CLI's JSON output of a command that must succeed. */
  async function run(...args: string[]) {
    const r = await s.cli([...args, '--json']);
    assert.equal(r.stderr, '', args.join(' '));
    assert.equal(r.code, 0);
    return r.json;
  }

  /** PGlite allows one process on a data dir: there the gateway runs only between CLI commands. */
  async function withGateway<T>(fn: (gw: Gateway) => Promise<T>): Promise<T> {
    const gw = await s.gateway({ COHORT_KEY_CACHE_MS: '1' });
    try {
      return await fn(gw);
    } finally {
      await gw.close();
    }
  }

  test('identity administration end to end', async () => {
    const org = await run('org', 'create', 'Acme');
    assert.deepEqual(org, {
      id: like(org.id, UUID),
      name: 'Acme',
      interns_programme: false,
      default_workspace_id: like(org.default_workspace_id, UUID),
      created_at: like(org.created_at, ISO),
    });

    const ada = await run('user', 'create', 'Ada', '--org', org.id, '--role', 'owner', '--interns');
    assert.deepEqual(ada, {
      id: like(ada.id, /^user_[0-9a-f]{24}$/),
      name: 'Ada',
      interns_programme: true,
      created_at: like(ada.created_at, ISO),
      memberships: [
        {
          org_id: org.id,
          user_id: ada.id,
          role: 'owner',
          joined_at: like(ada.memberships[0].joined_at, ISO),
          left_at: null,
        },
      ],
    });
    const bob = await run('user', 'create', 'Bob');
    assert.deepEqual(bob, {
      id: bob.id,
      name: 'Bob',
      interns_programme: false,
      created_at: like(bob.created_at, ISO),
      memberships: [],
    });

    const joined = await run('member', 'add', org.id, bob.id);
    assert.deepEqual(joined, {
      org_id: org.id,
      user_id: bob.id,
      role: 'member',
      joined_at: like(joined.joined_at, ISO),
      left_at: null,
    });
    assert.deepEqual(await run('programme', 'grant', '--user', bob.id), { user_id: bob.id, interns_programme: true });

    const admin = await run('key', 'create', '--org', org.id, '--user', ada.id, '--management', '--name', 'ops');
    const raw: string = like(admin.key, /^ck-[A-Za-z0-9_-]{43}$/);
    const adminRecord = {
      id: like(admin.id, UUID),
      org_id: org.id,
      name: 'ops',
      label: maskSecret(raw),
      hash: hashKey(raw),
      kind: 'management',
      acts_as: 'user',
      creator_user_id: ada.id,
      workspace_id: null,
      granted: false,
      created_at: like(admin.created_at, ISO),
      revoked_at: null,
    };
    assert.deepEqual(admin, { ...adminRecord, key: raw });

    const human = await s.cli([
      'key',
      'create',
      '--org',
      org.id,
      '--user',
      bob.id,
      '--acts-as',
      'organization',
      '--workspace',
      'default',
    ]);
    assert.equal(human.code, 0);
    const bobRaw = like(/^(ck-\S+)$/m.exec(human.stdout)?.[1], /^ck-/);
    assert.equal(human.stdout.split(bobRaw).length, 2, 'the secret is printed exactly once');
    assert.match(human.stdout, /Store this key now: it is shown only once\.\n$/);

    const keys = await s.cli(['key', 'list', '--org', org.id, '--json']);
    assert.ok(!keys.stdout.includes(raw) && !keys.stdout.includes(bobRaw), 'a listing never prints a secret');
    const bobKey = keys.json.data.find((k: { hash: string }) => k.hash === hashKey(bobRaw));
    assert.deepEqual(bobKey, {
      id: like(bobKey.id, UUID),
      org_id: org.id,
      name: 'standard key',
      label: maskSecret(bobRaw),
      hash: hashKey(bobRaw),
      kind: 'standard',
      acts_as: 'organization',
      creator_user_id: bob.id,
      workspace_id: org.default_workspace_id,
      granted: false,
      created_at: like(bobKey.created_at, ISO),
      revoked_at: null,
    });
    assert.deepEqual(keys.json.data.map((k: { id: string }) => k.id).sort(), [admin.id, bobKey.id].sort());
    assert.deepEqual(await run('org', 'list'), { data: [org] });
    const users = (await run('user', 'list')).data;
    assert.deepEqual(
      users.map((u: { id: string; memberships: unknown[] }) => [u.id, u.memberships.length]),
      [
        [ada.id, 1],
        [bob.id, 1],
      ],
    );

    // Keys made by the CLI authenticate on a gateway started on the same store afterwards.
    await withGateway(async (gw) => {
      assert.equal(gw.bootstrap, null, 'a store the CLI populated is not bootstrapped again');
      const ws = await get(gw, `/workspaces/${org.default_workspace_id}`, raw);
      assert.equal(ws.status, 200);
      assert.equal(ws.body.data.created_by, ADMIN_CREATOR);
      assert.deepEqual(await get(gw, '/workspaces', bobRaw), {
        status: 403,
        body: { error: { code: 403, message: 'only management keys can perform this operation' } },
      });
      const p = await gw.ctx.auth.authenticate(`Bearer ${bobRaw}`);
      assert.deepEqual(
        {
          actsAs: p.actsAs,
          subjectId: p.subjectId,
          workspaceId: p.workspaceId,
          internsProgramme: p.internsProgramme,
          creatorDeparted: p.creatorDeparted,
        },
        {
          actsAs: 'organization',
          subjectId: org.id,
          workspaceId: org.default_workspace_id,
          internsProgramme: true,
          creatorDeparted: false,
        },
      );
      if (s.kind === 'pglite') {
        // The gateway holds the embedded store: the command runs in it, through its admin socket.
        const through = await s.cli(['org', 'list', '--json']);
        assert.deepEqual([through.code, through.stderr], [0, '']);
        assert.ok(through.json.data.some((o: { id: string }) => o.id === org.id));
      }
    });

    // The creator leaves: the key stops working except where granted; revoke is final.
    const left = await run('member', 'remove', org.id, ada.id);
    assert.deepEqual(left, {
      org_id: org.id,
      user_id: ada.id,
      role: 'owner',
      joined_at: ada.memberships[0]!.joined_at,
      left_at: like(left.left_at, ISO),
    });
    await run('programme', 'revoke', '--user', bob.id);
    await withGateway(async (gw) => {
      const departed = await get(gw, '/workspaces', raw);
      assert.deepEqual(departed, {
        status: 403,
        body: {
          error: {
            code: 403,
            message: 'the member who created this key has left the organization and the key holds no grant',
          },
        },
      });
      assert.equal((await gw.ctx.auth.authenticate(`Bearer ${bobRaw}`)).internsProgramme, false);
    });
    assert.deepEqual(await run('key', 'grant', admin.id), { ...adminRecord, granted: true });
    const revoked = await run('key', 'revoke', bobKey.id);
    assert.deepEqual(revoked, { ...bobKey, revoked_at: like(revoked.revoked_at, ISO) });
    await withGateway(async (gw) => {
      assert.equal((await get(gw, '/workspaces', raw)).status, 200);
      assert.deepEqual(await get(gw, '/workspaces', bobRaw), {
        status: 401,
        body: { error: { code: 401, message: 'invalid or revoked API key' } },
      });
    });
    await run('key', 'ungrant', admin.id);
    await withGateway(async (gw) => assert.equal((await get(gw, '/workspaces', raw)).status, 403));

    const again = await s.cli(['key', 'revoke', bobKey.id]);
    assert.deepEqual([again.code, again.stderr], [1, `cohort: key ${bobKey.id} is already revoked\n`]);
    const stranger = await s.cli(['key', 'create', '--org', org.id, '--user', ada.id]);
    assert.deepEqual(
      [stranger.code, stranger.stderr],
      [1, `cohort: user ${ada.id} is not a member of organization ${org.id}\n`],
    );
  });
});

describe('cohort CLI and the gateway taking turns on a PGlite data dir', {
  skip: full === 'pglite' && 'the scenario above ran on PGlite',
}, () => {
  const s = sharedStore('pglite');
  after(() => s.cleanup());

  test('keys the CLI creates or revokes take effect on the next gateway start, and at once through a running one', async () => {
    const run = async (...args: string[]) => {
      const r = await s.cli([...args, '--json']);
      assert.deepEqual([r.code, r.stderr], [0, ''], args.join(' '));
      return r.json;
    };
    const org = await run('org', 'create', 'Solo', '--interns');
    assert.deepEqual(org, {
      id: org.id,
      name: 'Solo',
      interns_programme: true,
      default_workspace_id: like(org.default_workspace_id, UUID),
      created_at: like(org.created_at, ISO),
    });
    const user = await run('user', 'create', 'Ada', '--org', org.id);
    const key = await run('key', 'create', '--org', org.id, '--user', user.id, '--management');
    assert.equal(key.hash, hashKey(key.key));

    let gw = await s.gateway();
    try {
      assert.equal((await get(gw, `/workspaces/${org.default_workspace_id}`, key.key)).status, 200);
      // While the gateway holds the data dir, the CLI acts through it, and its changes take effect at once.
      const made = await run('key', 'create', '--org', org.id, '--user', user.id);
      assert.equal((await get(gw, '/key', made.key)).status, 200);
      await run('key', 'revoke', made.id);
      assert.equal((await get(gw, '/key', made.key)).status, 401);
      const refused = await s.cli(['key', 'revoke', made.id]);
      assert.deepEqual(
        [refused.code, refused.stderr],
        [1, `cohort: the running gateway could not run the command: key ${made.id} is already revoked\n`],
      );
    } finally {
      await gw.close();
    }
    await run('key', 'revoke', key.id);
    gw = await s.gateway();
    try {
      assert.deepEqual(await get(gw, '/workspaces', key.key), {
        status: 401,
        body: { error: { code: 401, message: 'invalid or revoked API key' } },
      });
    } finally {
      await gw.close();
    }
  });
});
