// The files API (docs/guides/files.md) end to end against isolated interns on disk images: round
// trips of files and folders awake, asleep and stopped, and the hostile tenant's side: paths that
// climb out, links planted to make the gateway read or write elsewhere, a fifo, crafted tar
// streams, a body past the bound and one that never ends, another account's intern.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { waitFor, waitForValue } from './helpers/wait.ts';
import { execFileSync } from 'node:child_process';
import { type IncomingMessage, request as httpRequest } from 'node:http';
import { create as tarCreate, Header, list as tarList } from 'tar';
import { shellOut as shellIn, startInternFixture, type InternFixture } from './helpers/interns.ts';
import { noSandbox } from './helpers/sandbox.ts';
import { createTestAccount } from './helpers/accounts.ts';
import { getInternById } from '../src/gateway/interns/interns.ts';

// Big enough that a folder's download outgrows every buffer between its tar and the client.
const MAX_MB = 16;
const IDLE_MS = 4000;
/** COHORT_FILES_IDLE_MS: a download's client that takes nothing for this long is cut off. */
const READER_IDLE_MS = 2000;
/** The shell's output without its exit line. */

describe('files API', { skip: noSandbox }, () => {
  let f: InternFixture;
  let scratch: string;
  let id: string;

  const url = (path: string) => `${f.gw.url}/interns/${id}/files${path}`;
  const auth = (key?: string) => ({ authorization: `Bearer ${key ?? f.gw.keys.api_key}` });
  async function req(method: string, path: string, body?: BodyInit | Buffer, o: { key?: string; type?: string } = {}) {
    const res = await fetch(url(path), {
      method,
      headers: { ...auth(o.key), ...(o.type ? { 'content-type': o.type } : {}) },
      body,
      ...(body instanceof ReadableStream ? { duplex: 'half' } : {}),
    } as RequestInit);
    const buf = Buffer.from(await res.arrayBuffer());
    const type = res.headers.get('content-type') ?? '';
    return {
      status: res.status,
      type,
      buf,
      body: type.startsWith('application/json') ? JSON.parse(buf.toString()) : null,
    };
  }
  const refused = (status: number, message: string, reason: string, retryable = false) => ({
    error: { code: status, message, metadata: { reason, retryable } },
  });
  async function tarOf(files: Record<string, string>, entries = ['.']): Promise<Buffer> {
    const dir = mkdtempSync(join(scratch, 'src-'));
    for (const [p, content] of Object.entries(files)) {
      mkdirSync(join(dir, p, '..'), { recursive: true });
      writeFileSync(join(dir, p), content);
    }
    const out = join(dir, '..', `${Date.now()}-${Math.random()}.tar`);
    await tarCreate({ file: out, cwd: dir, portable: true }, entries);
    return readFileSync(out);
  }
  /** A tar stream of one crafted entry (any path, any type), then the end. */
  function crafted(path: string, type: string, o: { body?: string; linkpath?: string } = {}): Buffer {
    const data = Buffer.from(o.body ?? '');
    const h = new Header({
      path,
      type: type as any,
      size: data.length,
      mode: 0o644,
      mtime: new Date(0),
      linkpath: o.linkpath,
    });
    h.encode();
    const pad = Buffer.alloc((512 - (data.length % 512)) % 512);
    return Buffer.concat([h.block!, data, pad, Buffer.alloc(1024)]);
  }
  const spoolFiles = () => {
    try {
      return readdirSync(join(f.gw.dataDir, 'run', 'files'));
    } catch {
      return [];
    }
  };
  const spoolEmpty = () => assert.deepEqual(spoolFiles(), [], 'no spool file is left behind');
  /** The intern's record once a sweep finds it idle past COHORT_INTERN_IDLE_MS and puts it to sleep
   * (its daemon judges idleness, on its own clock). */
  const fallenAsleep = () =>
    waitForValue(
      'the intern is asleep',
      async () => {
        await f.gw.ctx.fleet.sweep();
        return getInternById(f.gw.ctx.store.db, id);
      },
      (r) => r?.power === 'asleep',
      { timeoutMs: 30_000, everyMs: 100 },
    );

  before(async () => {
    scratch = mkdtempSync(join(tmpdir(), 'cohort-files-'));
    f = await startInternFixture({
      onDisk: true,
      env: {
        COHORT_INTERN_DISK_MB: '64',
        COHORT_INTERN_IDLE_MS: String(IDLE_MS),
        COHORT_FILES_MAX_MB: String(MAX_MB),
        COHORT_FILES_MAX_ENTRIES: '50',
        COHORT_FILES_IDLE_MS: String(READER_IDLE_MS),
      },
    });
    id = await f.intern('files');
  });
  after(async () => {
    await f?.close();
    rmSync(scratch, { recursive: true, force: true });
  });

  test('a file goes in and comes out byte for byte, as the intern uid, where the intern sees it; folders list; move; delete', async () => {
    const bytes = Buffer.from(Array.from({ length: 70_000 }, (_, i) => (i * 7) % 256));
    const put = await req('PUT', '/src/deep/data.bin', bytes, { type: 'application/octet-stream' });
    assert.equal(put.status, 200, put.buf.toString());
    assert.deepEqual(put.body, { path: 'src/deep/data.bin', type: 'file', size: 70_000, created: true });
    // JSON is bytes too: a .json file with its content type is stored as sent, not parsed.
    const json = await req('PUT', '/src/conf.json', '{"a": 1}', { type: 'application/json' });
    assert.deepEqual(json.body, { path: 'src/conf.json', type: 'file', size: 8, created: true });

    const got = await req('GET', '/src/deep/data.bin');
    assert.equal(got.status, 200);
    assert.equal(got.type, 'application/octet-stream');
    assert.ok(got.buf.equals(bytes));
    const seen = await shellIn(
      f,
      id,
      'stat -c "%u %s %a" /intern/work/src/deep/data.bin; id -u; cat /intern/work/src/conf.json',
    );
    const [stat, uid, content] = seen.split('\n');
    assert.equal(stat, `${uid} 70000 644`, seen);
    assert.notEqual(uid, '0');
    assert.equal(content, '{"a": 1}');

    const listing = await req('GET', '/src');
    assert.equal(listing.status, 200);
    assert.deepEqual(
      listing.body.entries.map((e: any) => [e.name, e.type, e.size]),
      [
        ['conf.json', 'file', 8],
        ['deep', 'directory', null],
      ],
    );
    assert.equal(listing.body.truncated, false);

    const over = await req('PUT', '/src/conf.json', 'replaced');
    assert.deepEqual(over.body, { path: 'src/conf.json', type: 'file', size: 8, created: false });
    const moved = await fetch(`${f.gw.url}/interns/${id}/files-move`, {
      method: 'POST',
      headers: { ...auth(), 'content-type': 'application/json' },
      body: JSON.stringify({ from: 'src/conf.json', to: 'etc/conf.txt' }),
    });
    assert.deepEqual(
      [moved.status, await moved.json()],
      [200, { from: 'src/conf.json', to: 'etc/conf.txt', type: 'file' }],
    );
    assert.equal((await req('GET', '/etc/conf.txt')).buf.toString(), 'replaced');
    const clash = await fetch(`${f.gw.url}/interns/${id}/files-move`, {
      method: 'POST',
      headers: { ...auth(), 'content-type': 'application/json' },
      body: JSON.stringify({ from: 'etc/conf.txt', to: 'src/deep' }),
    });
    assert.deepEqual(
      [clash.status, await clash.json()],
      [409, { error: { code: 409, message: 'resource conflict: "src/deep" already exists' } }],
    );

    const del = await req('DELETE', '/src');
    assert.deepEqual(del.body, { path: 'src', type: 'directory', deleted: true });
    const gone = await req('GET', '/src/deep/data.bin');
    assert.deepEqual([gone.status, gone.body], [404, refused(404, 'resource not found: file "src"', 'not_found')]);
    spoolEmpty();
  });

  test('a folder goes in and out as a tar stream', async () => {
    const tar = await tarOf({ 'proj/a.txt': 'alpha', 'proj/lib/b.txt': 'beta' });
    const put = await req('PUT', '/up?format=tar', tar, { type: 'application/x-tar' });
    assert.deepEqual([put.status, put.body], [200, { path: 'up', type: 'directory' }]);
    assert.equal((await shellIn(f, id, 'cat /intern/work/up/proj/lib/b.txt')).trim(), 'beta');
    const out = await req('GET', '/up/proj?format=tar');
    assert.equal(out.type, 'application/x-tar');
    const file = join(scratch, 'out.tar');
    writeFileSync(file, out.buf);
    const entries: string[] = [];
    await tarList({ file, onReadEntry: (e) => void entries.push(`${e.path}:${e.type}`) });
    assert.deepEqual(entries.sort(), ['./:Directory', './a.txt:File', './lib/:Directory', './lib/b.txt:File']);
    spoolEmpty();
  });

  test("a folder's download keeps links and fifos as what they are and is bounded before its first byte", async () => {
    await shellIn(
      f,
      id,
      [
        'cd /intern/work && mkdir dl many big locked',
        'echo hi > dl/a.txt && ln -s /etc/passwd dl/pw && mkfifo dl/pipe',
        'for i in $(seq 60); do : > many/f$i; done',
        'truncate -s 9M big/a big/b',
        'echo x > locked/open.txt && echo y > locked/shut.txt && chmod 000 locked/shut.txt',
      ].join(' && '),
    );
    const out = await req('GET', '/dl?format=tar');
    assert.deepEqual([out.status, out.type], [200, 'application/x-tar']);
    const file = join(scratch, 'dl.tar');
    writeFileSync(file, out.buf);
    const entries: string[] = [];
    await tarList({
      file,
      onReadEntry: (e) => {
        entries.push(`${e.path}:${e.type}:${e.linkpath ?? ''}:${e.size}`);
        e.resume();
      },
    });
    assert.deepEqual(entries.sort(), [
      './:Directory::0',
      './a.txt:File::3',
      './pipe:FIFO::0',
      './pw:SymbolicLink:/etc/passwd:0',
    ]);

    const many = await req('GET', '/many?format=tar');
    assert.deepEqual(
      [many.status, many.body],
      [
        413,
        refused(413, 'the folder "many" holds more than 50 entries (COHORT_FILES_MAX_ENTRIES)', 'payload_too_large'),
      ],
    );
    const big = await req('GET', '/big?format=tar');
    assert.deepEqual(
      [big.status, big.body],
      [
        413,
        refused(
          413,
          `the folder "big" as a tar stream exceeds the files API's limit of ${MAX_MB * 1048576} bytes (COHORT_FILES_MAX_MB)`,
          'payload_too_large',
        ),
      ],
    );
    const locked = await req('GET', '/locked?format=tar');
    assert.deepEqual(
      [locked.status, locked.body],
      [
        409,
        {
          error: {
            code: 409,
            message: `resource conflict: "locked/shut.txt" cannot be read or written by the intern's own user (its permissions)`,
          },
        },
      ],
    );
    assert.equal((await req('GET', '/dl/pw?format=tar')).status, 400);
    // GNU tar starts beside the walk: a refused download's tar is stopped with it (none is left
    // by the answer, which waits for the job's end).
    const uid = Number(await shellIn(f, id, 'id -u'));
    const tars = execFileSync('ps', ['-eo', 'uid=,args='], { encoding: 'utf8' })
      .split('\n')
      .filter((l) => Number(l.trim().split(/\s+/)[0]) === uid && /tar --create/.test(l));
    assert.deepEqual(tars, []);
    spoolEmpty();
  });

  test("a client that goes away mid-download stops the folder's tar", async () => {
    await shellIn(f, id, 'mkdir -p /intern/work/stream && truncate -s 15M /intern/work/stream/zeros');
    const uid = Number(await shellIn(f, id, 'id -u'));
    /** The files API's processes packing a folder of this intern (its uid's tar and files-op). */
    const packers = () =>
      execFileSync('ps', ['-eo', 'uid=,args='], { encoding: 'utf8' })
        .split('\n')
        .filter((l) => Number(l.trim().split(/\s+/)[0]) === uid && /tar --create|files-op\.mjs pack/.test(l));
    const { status, received, request } = await new Promise<{ status: number; received: number; request: any }>(
      (resolve, reject) => {
        const request = httpRequest(url('/stream?format=tar'), { headers: auth() }, (res) => {
          res.once('data', (c: Buffer) => {
            // Read no more: the tar is held by backpressure, mid-stream.
            res.pause();
            resolve({ status: res.statusCode!, received: c.length, request });
          });
        });
        request.on('error', reject).end();
      },
    );
    assert.equal(status, 200);
    assert.ok(received < MAX_MB * 1048576);
    // A fixed wait: what is checked is that the tar does not run to its end by itself meanwhile.
    await sleep(300);
    assert.equal(packers().length > 0, true, 'the tar is still running, held by the unread stream');
    request.destroy();
    const left = await waitForValue('the tar stopped when its client went away', packers, (l) => l.length === 0);
    assert.deepEqual(left, [], 'the tar stopped when its client went away');
    // The next download of the same folder is whole.
    const again = await req('GET', '/stream?format=tar');
    assert.equal(again.status, 200);
    // 15 MiB, two headers and the end, in whole records of 64 KiB.
    assert.equal(again.buf.length, 15 * 1048576 + 65536);
    spoolEmpty();
  });

  test("a client that stays but reads nothing is cut off after COHORT_FILES_IDLE_MS, and the folder's tar stops", async () => {
    await shellIn(f, id, 'mkdir -p /intern/work/idle && truncate -s 15M /intern/work/idle/zeros');
    const uid = Number(await shellIn(f, id, 'id -u'));
    const packers = () =>
      execFileSync('ps', ['-eo', 'uid=,args='], { encoding: 'utf8' })
        .split('\n')
        .filter((l) => Number(l.trim().split(/\s+/)[0]) === uid && /tar --create|files-op\.mjs pack/.test(l));
    // Asleep, its disk is read in a mount of the download's own: nothing but the idle limit ends
    // that tar (a hibernation would end one run in its daemon's namespaces).
    const row = await fallenAsleep();
    assert.equal(row?.power, 'asleep');
    const started = Date.now();
    const res = await new Promise<IncomingMessage>((resolve, reject) => {
      const request = httpRequest(url('/idle?format=tar'), { headers: auth() }, (r) => {
        r.once('data', () => {
          // Read no more, and stay connected.
          r.pause();
          resolve(r);
        });
      });
      request.once('error', reject).end();
    });
    assert.equal(res.statusCode, 200);
    assert.equal(packers().length > 0, true, 'the tar is held by the unread stream');
    const left = await waitForValue('the tar stopped with the idle client', packers, (l) => l.length === 0, {
      timeoutMs: 60_000,
    });
    assert.deepEqual(left, [], 'the tar stopped with the idle client');
    assert.ok(Date.now() - started >= READER_IDLE_MS, 'not before the idle limit');
    // What the client reads from now on ends short: the response was aborted, not ended.
    const complete = await new Promise<boolean>((resolve) => {
      res.on('error', () => {}).once('close', () => resolve(res.complete));
      res.resume();
    });
    assert.equal(complete, false);
    assert.equal((await getInternById(f.gw.ctx.store.db, id))?.power, 'asleep');
    spoolEmpty();
  });

  test('paths that climb out, absolute paths, NULs and over-long names are refused naming the path', async () => {
    const cases: [string, string][] = [
      ['/..%2F..%2Fetc%2Fpasswd', '"../../etc/passwd" climbs out of the work folder with ..'],
      ['/a/..%2F..%2Fx', '"a/../../x" climbs out of the work folder with ..'],
      ['/%2Fetc%2Fpasswd', '"/etc/passwd" is absolute: paths are relative to the work folder /intern/work'],
      ['/a%00b', '"a\u0000b" contains a NUL byte'],
      [`/${'n'.repeat(256)}`, `"${'n'.repeat(256)}" has a name longer than 255 bytes`],
    ];
    for (const [path, why] of cases)
      for (const method of ['GET', 'PUT', 'DELETE']) {
        const r = await req(method, path, method === 'PUT' ? 'x' : undefined);
        assert.deepEqual(
          [r.status, r.body],
          [400, refused(400, `invalid request parameters: path: ${why}`, 'bad_request')],
          `${method} ${path}`,
        );
      }
  });

  test('links planted by the tenant are refused by name, awake and stopped; a fifo neither hangs nor is read', async () => {
    const mk = join(f.gw.dataDir, 'master.key');
    await shellIn(
      f,
      id,
      `cd /intern/work && mkdir -p trap && ln -sf /etc/passwd trap/pw && ln -sfn / trap/root && ln -sfn /intern/home trap/home && ln -sf ${mk} trap/mk && mkfifo trap/pipe && echo secret > /intern/home/own.txt`,
    );
    const check = async (awake: boolean) => {
      for (const [path, name] of [
        ['/trap/pw', 'trap/pw'],
        ['/trap/mk', 'trap/mk'],
        ['/trap/root/etc/passwd', 'trap/root'],
        ['/trap/home/own.txt', 'trap/home'],
      ]) {
        const r = await req('GET', path!);
        assert.deepEqual(
          [r.status, r.body],
          [
            400,
            refused(
              400,
              `invalid request parameters: path: "${name}" is a symbolic link: the files API follows no link`,
              'bad_request',
            ),
          ],
          path,
        );
      }
      const fifo = await req('GET', '/trap/pipe');
      assert.deepEqual(
        [fifo.status, fifo.body],
        [
          400,
          refused(
            400,
            'invalid request parameters: path: "trap/pipe" is a device, fifo or socket: only files and folders are handled',
            'bad_request',
          ),
        ],
      );
      const listing = await req('GET', '/trap');
      assert.deepEqual(
        listing.body.entries.map((e: any) => `${e.name}:${e.type}`),
        ['home:symlink', 'mk:symlink', 'pipe:special', 'pw:symlink', 'root:symlink'],
      );
      if (!awake) return;
      for (const path of ['/trap/root/tmp/planted', '/trap/home/planted', '/trap/pw']) {
        const w = await req('PUT', path, 'x');
        assert.equal(w.status, 400, `${path}: ${w.buf}`);
        assert.match(w.body.error.message, /is a symbolic link/);
      }
    };
    await check(true);
    assert.equal((await shellIn(f, id, 'ls /intern/home; cat /etc/passwd | wc -l')).includes('planted'), false);
    // Deleting a link removes the link, never what it names.
    assert.deepEqual((await req('DELETE', '/trap/home')).body, { path: 'trap/home', type: 'symlink', deleted: true });
    assert.equal((await shellIn(f, id, 'cat /intern/home/own.txt')).trim(), 'secret');
    await shellIn(f, id, 'ln -sfn /intern/home /intern/work/trap/home');

    // Stopped: read from its disk mounted read-only, without starting it; a write is refused.
    assert.equal((await f.gw.call('POST', `/interns/${id}/suspend`)).status, 200);
    await check(false);
    assert.equal((await req('GET', '/up/proj/a.txt')).buf.toString(), 'alpha');
    const w = await req('PUT', '/new.txt', 'x');
    assert.equal(w.status, 409);
    assert.equal(w.body.error.metadata.reason, 'intern_not_ready');
    assert.equal((await getInternById(f.gw.ctx.store.db, id))?.status, 'stopped');
    assert.equal((await f.gw.call('POST', `/interns/${id}/provision`)).status, 202);
    await f.gw.ctx.interns.idle();
    // Running again before the tests after this one (a start on a loaded machine can take a while).
    const again = await waitForValue(
      'the intern runs again',
      () => getInternById(f.gw.ctx.store.db, id),
      (r) => r?.status === 'running',
      { timeoutMs: 60_000 },
    );
    assert.equal(again?.status, 'running');
    spoolEmpty();
  });

  test('crafted tar streams are refused naming the entry, with nothing written', async () => {
    const cases: [Buffer, string][] = [
      [
        crafted('../evil', 'File', { body: 'x' }),
        'tar entry "../evil" is a path that climbs out of the work folder with ..',
      ],
      [
        crafted('/abs', 'File', { body: 'x' }),
        'tar entry "/abs" is a path that is absolute: paths are relative to the work folder /intern/work',
      ],
      [crafted('ln', 'SymbolicLink', { linkpath: '/etc/shadow' }), 'tar entry "ln" is a symbolic link'],
      [crafted('hard', 'Link', { linkpath: 'x' }), 'tar entry "hard" is a hard link'],
      [crafted('dev', 'CharacterDevice'), 'tar entry "dev" is a device'],
      [
        crafted('sub/x', 'File', { body: 'x' }),
        'tar entry "sub/x" is a path whose folder "sub" is not an entry before it',
      ],
    ];
    for (const [tar, why] of cases) {
      const r = await req('PUT', '/crafted?format=tar', tar);
      assert.deepEqual(
        [r.status, r.body],
        [400, refused(400, `invalid request parameters: body: ${why}`, 'bad_request')],
        why,
      );
    }
    const gz = await req('PUT', '/crafted?format=tar', Buffer.from([0x1f, 0x8b, 8, 0, 0, 0]));
    assert.equal(
      gz.body.error.message,
      'invalid request parameters: body: a compressed tar stream; send it uncompressed (tar -c, not tar -cz)',
    );
    const many = await tarOf(Object.fromEntries(Array.from({ length: 60 }, (_, i) => [`f${i}`, 'x'])));
    const r = await req('PUT', '/crafted?format=tar', many);
    assert.equal(
      r.body.error.message,
      'invalid request parameters: body: the tar stream holds more than 50 entries (COHORT_FILES_MAX_ENTRIES)',
    );
    assert.equal((await req('GET', '/crafted')).status, 404);

    // A link planted where the archive has a folder: GNU tar makes a real folder there, and the
    // link's target gets nothing.
    await shellIn(f, id, 'mkdir -p /intern/work/land && ln -sfn /intern/home /intern/work/land/a');
    const up = await req('PUT', '/land?format=tar', await tarOf({ 'a/x.txt': 'landed' }));
    assert.equal(up.status, 200, up.buf.toString());
    const seen = await shellIn(f, id, 'ls /intern/home; stat -c %F /intern/work/land/a; cat /intern/work/land/a/x.txt');
    assert.doesNotMatch(seen, /x\.txt/);
    assert.match(seen, /^directory\nlanded/m);
    spoolEmpty();
  });

  test('a body past the bound and one that never ends are refused 413, and nothing is kept', async () => {
    const big = await req('PUT', '/big.bin', Buffer.alloc(MAX_MB * 1024 * 1024 + 1));
    assert.deepEqual(
      [big.status, big.body],
      [
        413,
        refused(
          413,
          `the body exceeds the files API's limit of ${MAX_MB * 1048576} bytes (COHORT_FILES_MAX_MB)`,
          'payload_too_large',
        ),
      ],
    );
    let sent = 0;
    const endless = new ReadableStream({
      pull(c) {
        sent += 65536;
        c.enqueue(new Uint8Array(65536));
      },
    });
    const r = await req('PUT', '/endless.bin', endless);
    assert.equal(r.status, 413);
    assert.ok(sent < MAX_MB * 1048576 * 4, `the gateway stopped reading early (${sent} bytes sent)`);
    assert.equal((await req('GET', '/big.bin')).status, 404);
    assert.equal((await req('GET', '/endless.bin')).status, 404);
    // The refused bodies' spool files are removed as their requests end, a moment after the answer.
    await waitFor('no spool file is left', () => spoolFiles().length === 0);
    spoolEmpty();
  });

  test("another account's key gets 404 on every files route, and the intern is untouched", async () => {
    await req('PUT', '/mine.txt', 'mine');
    const stranger = await createTestAccount(f.gw.ctx.store.db, { name: 'stranger', internsProgramme: true });
    for (const [method, body] of [
      ['GET', undefined],
      ['PUT', 'theirs'],
      ['DELETE', undefined],
    ] as const) {
      const r = await req(method, '/mine.txt', body, { key: stranger.apiKey });
      assert.deepEqual([r.status, r.body], [404, refused(404, 'resource not found: intern', 'not_found')], method);
    }
    assert.equal((await req('GET', '/mine.txt')).buf.toString(), 'mine');
  });

  test('asleep, it is read without being woken; a write wakes it', async () => {
    await req('PUT', '/sleepy.txt', 'zzz');
    const row = await fallenAsleep();
    assert.deepEqual([row?.status, row?.power, row?.daemonPid], ['running', 'asleep', null]);
    assert.equal((await req('GET', '/sleepy.txt')).buf.toString(), 'zzz');
    assert.deepEqual((await req('GET', '')).body.entries.map((e: any) => e.name).includes('sleepy.txt'), true);
    assert.equal((await getInternById(f.gw.ctx.store.db, id))?.power, 'asleep');
    const w = await req('PUT', '/awake.txt', 'up');
    assert.equal(w.status, 200, w.buf.toString());
    assert.equal((await getInternById(f.gw.ctx.store.db, id))?.power, 'awake');
    assert.equal(await shellIn(f, id, 'cat /intern/work/awake.txt'), 'up');
  });

  test("a folder's upload merges into a folder that exists, and one refused after megabytes of good entries leaves nothing, wherever it goes", async () => {
    await shellIn(
      f,
      id,
      'mkdir -p /intern/work/merge/sub && echo keep > /intern/work/merge/keep.txt && echo old > /intern/work/merge/sub/over.txt',
    );
    const merged = await req('PUT', '/merge?format=tar', await tarOf({ 'sub/over.txt': 'new', 'sub/add.txt': 'add' }));
    assert.deepEqual([merged.status, merged.body], [200, { path: 'merge', type: 'directory' }]);
    const tree = 'cd /intern/work/merge && find . | sort && cat keep.txt sub/over.txt sub/add.txt';
    const before = await shellIn(f, id, tree);
    assert.equal(before, '.\n./keep.txt\n./sub\n./sub/add.txt\n./sub/over.txt\nkeep\nnewadd');

    // Megabytes of good entries, then one that climbs out: none of them is written.
    const good = await tarOf({ 'big.bin': 'x'.repeat(2 * 1024 * 1024), 'late.txt': 'late' });
    const bad = Buffer.concat([good.subarray(0, good.length - 1024), crafted('../evil', 'File', { body: 'x' })]);
    const why =
      'invalid request parameters: body: tar entry "../evil" is a path that climbs out of the work folder with ..';
    for (const path of ['/half', '/merge', '/']) {
      const r = await req('PUT', `${path}?format=tar`, bad);
      assert.deepEqual([r.status, r.body], [400, refused(400, why, 'bad_request')], path);
    }
    assert.equal((await req('GET', '/half')).status, 404);
    assert.equal(await shellIn(f, id, tree), before);
    const left = await shellIn(f, id, 'find /intern/work -name big.bin -o -name late.txt');
    assert.equal(left.trim(), '', 'none of the refused entries is written');

    const root = await req('PUT', '/?format=tar', await tarOf({ 'rootfile.txt': 'at the root' }));
    assert.deepEqual([root.status, root.body], [200, { path: '', type: 'directory' }]);
    assert.equal(await shellIn(f, id, 'cat /intern/work/rootfile.txt'), 'at the root');

    // Every kind of name at the top of a new target is moved into it: hidden ones, ones of two
    // dots, and names a shell would read as patterns or options.
    const names = ['.env', '..dots', 'plain', '*', '-n', 'with space'];
    const odd = await req('PUT', '/odd/names?format=tar', await tarOf(Object.fromEntries(names.map((n) => [n, n]))));
    assert.deepEqual([odd.status, odd.body], [200, { path: 'odd/names', type: 'directory' }]);
    assert.deepEqual((await shellIn(f, id, 'cd /intern/work/odd/names && ls -A1 && cat ./-n')).split('\n'), [
      '*',
      '-n',
      '..dots',
      '.env',
      'plain',
      'with space',
      '-n',
    ]);
  });
  test("an upload's staging folder is beyond the tenant's reach, and nothing of an upload stays when its target is a file, a folder is in a file's way, the disk fills or its client goes", async () => {
    // The staging folders, as the intern's launcher sees its disk (root's view, from the host).
    const row = await getInternById(f.gw.ctx.store.db, id);
    const stagingDir = `/proc/${row?.daemonPid}/root${join(f.gw.dataDir, 'interns', id, 'disk', '.uploads')}`;
    const staged = () => readdirSync(stagingDir);
    // The work folder's tree, as a digest (its listing is longer than a shell's answer).
    const tree = () => shellIn(f, id, 'cd /intern/work && find . | LC_ALL=C sort | md5sum');
    // Zeros after the archive's end (a sender blocking in records larger than GNU tar's) are read
    // and dropped: the upload ends well.
    const padded = Buffer.concat([await tarOf({ 'a.txt': 'a' }), Buffer.alloc(256 * 1024)]);
    const first = await req('PUT', '/first?format=tar', padded);
    assert.deepEqual([first.status, first.body], [200, { path: 'first', type: 'directory' }]);
    assert.equal((await req('GET', '/first/a.txt')).buf.toString(), 'a');
    assert.deepEqual(staged(), []);
    // Root's (unmapped in the intern's own namespace: the overflow uid), and not to be listed.
    assert.equal(
      await shellIn(f, id, 'ls /intern/.uploads 2>&1; stat -c "%u %a" /intern/.uploads'),
      "ls: cannot open directory '/intern/.uploads': Permission denied\n65534 711",
    );
    const before = await tree();

    // A target that is a file: refused as soon as it is looked at, the body's end never waited for.
    await req('PUT', '/plain.txt', 'plain');
    // node:http rather than fetch: the answer comes while the body is still being sent, and the
    // connection is closed after it, which fetch may report as a failure of the body it sends.
    let sent = 0;
    // A connection that fails before the answer is read settles it too (as the failure), never a hang.
    const onFile = await new Promise<{ status: number | string; body: unknown }>((resolve) => {
      const request = httpRequest(url('/plain.txt?format=tar'), { method: 'PUT', headers: auth() }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.once('end', () => resolve({ status: res.statusCode!, body: JSON.parse(Buffer.concat(chunks).toString()) }));
        res.once('error', (err) => resolve({ status: `the answer failed: ${err.message}`, body: null }));
      });
      request.on('error', (err) => resolve({ status: `the request failed: ${err.message}`, body: null }));
      const more = () => {
        if (request.destroyed || sent >= MAX_MB * 1048576) return;
        sent += 65536;
        request.write(Buffer.alloc(65536));
        setTimeout(more, 5);
      };
      more();
    });
    assert.deepEqual(
      [onFile.status, onFile.body],
      [409, { error: { code: 409, message: 'resource conflict: "plain.txt" is a file, not a folder' } }],
    );
    assert.ok(sent < MAX_MB * 1048576, `the upload was stopped early (${sent} bytes sent)`);

    // A file where the target holds a folder with something in it: refused whole, naming it.
    await shellIn(f, id, 'mkdir -p /intern/work/clash/full && echo kept > /intern/work/clash/full/x');
    const clash = await req('PUT', '/clash?format=tar', await tarOf({ 'new.txt': 'n', full: 'a file' }));
    assert.deepEqual(
      [clash.status, clash.body],
      [
        409,
        {
          error: {
            code: 409,
            message: 'resource conflict: "clash/full" is a folder; upload a folder with ?format=tar',
          },
        },
      ],
    );
    assert.equal(await shellIn(f, id, 'ls /intern/work/clash; cat /intern/work/clash/full/x'), 'full\nkept');

    // The intern's 64 MB disk filled by the intern itself: 413, and the staged part goes.
    await shellIn(f, id, 'dd if=/dev/zero of=/intern/work/fill bs=1M 2>/dev/null; true');
    const full = await req('PUT', '/onfull?format=tar', await tarOf({ 'big.bin': 'x'.repeat(4 * 1024 * 1024) }));
    assert.deepEqual([full.status, full.body], [413, refused(413, "the intern's disk is full", 'payload_too_large')]);
    await shellIn(f, id, 'rm /intern/work/fill');

    // A client that goes away mid-upload: its tar stops, and nothing of it is kept.
    const good = await tarOf({ 'part.bin': 'p'.repeat(2 * 1024 * 1024) });
    const request = httpRequest(url('/gone?format=tar'), { method: 'PUT', headers: auth() });
    request.on('error', () => {});
    request.write(good.subarray(0, 1024 * 1024));
    await waitFor('the upload is being unpacked', () => staged().length === 1);
    request.destroy();
    await waitFor('its staging folder is gone', () => staged().length === 0);
    for (const [path, status] of [
      ['/plain.txt', 200],
      ['/onfull', 404],
      ['/gone', 404],
    ] as const)
      assert.equal((await req('GET', path)).status, status, path);
    // The work folder holds what was put there on purpose, and nothing of the refused uploads.
    await shellIn(f, id, 'rm -r /intern/work/plain.txt /intern/work/clash');
    assert.equal(await tree(), before);
  });
});
