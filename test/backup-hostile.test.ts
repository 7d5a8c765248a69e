// Backup and restore against a hostile tenant (docs/backup.md, docs/isolation.md): an intern that
// swaps its files for symlinks to host files while three backups read it, links left on a stopped
// intern's disk, an intern whose files cannot be read at all, and archives crafted to write
// outside the data dir. No host byte may reach an archive, every backup completes, and a crafted
// archive is refused naming its entry, with nothing written.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  linkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHash } from 'node:crypto';
import { extract as tarExtract, list as tarList } from 'tar';
import { shellIn, startInternFixture, type InternFixture } from './helpers/interns.ts';
import { noSandbox } from './helpers/sandbox.ts';
import { runCohort as cohort } from './helpers/cli.ts';

/** Every file of an archive and of the intern archives inside it, as one string of bytes. */
async function everything(file: string, scratch: string): Promise<{ bytes: string; entries: string[] }> {
  const dir = mkdtempSync(join(scratch, 'open-'));
  await tarExtract({ file, cwd: dir });
  let bytes = '';
  const entries: string[] = [];
  for (const e of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (!e.isFile()) continue;
    const path = join(e.parentPath, e.name);
    bytes += readFileSync(path, 'latin1');
    if (!e.name.endsWith('.tar')) continue;
    await tarList({
      file: path,
      onReadEntry: (x) => {
        entries.push(`${e.name}:${x.path}:${x.type}${x.linkpath ? `->${x.linkpath}` : ''}`);
        x.resume();
      },
    });
  }
  return { bytes, entries };
}

describe('backup against a hostile tenant', { skip: noSandbox }, () => {
  let f: InternFixture;
  let scratch: string;
  let racer: string;
  let host: { masterKey: string; bootstrap: string; shadow: string };

  before(async () => {
    scratch = mkdtempSync(join(tmpdir(), 'cohort-backup-hostile-'));
    f = await startInternFixture({ onDisk: true, env: { COHORT_INTERN_DISK_MB: '64' } });
    racer = await f.intern('racer');
    host = {
      masterKey: readFileSync(join(f.gw.dataDir, 'master.key'), 'utf8').trim(),
      bootstrap: JSON.parse(readFileSync(join(f.gw.dataDir, 'bootstrap.json'), 'utf8')).api_key,
      shadow: readFileSync('/etc/shadow', 'latin1').split('\n')[0]!,
    };
  });
  after(async () => {
    await f.close();
    rmSync(scratch, { recursive: true, force: true });
  });

  test('three backups race a swap loop (files and folders exchanged with links to host files): no host byte in any, all complete, the raced entries reported', async () => {
    const d = f.gw.dataDir;
    // renameat2(RENAME_EXCHANGE) in a tight loop, between a file and a link to the master key and
    // between a folder and a link to /: what a path names changes between any two looks at it.
    const loop = [
      'import ctypes,os',
      'L=ctypes.CDLL(None,use_errno=True)',
      'os.makedirs("race/dir/sub",exist_ok=True)',
      // Large enough that an exchange lands while tar reads it, which tar notices and reports.
      'open("race/file","w").write("tenant bytes "*700000)',
      'open("race/dir/sub/f","w").write("x")',
      // What tar cannot read is skipped and reported every time.
      'open("race/locked","w").write("x");os.chmod("race/locked",0)',
      `[os.path.lexists(p) or os.symlink(t,p) for p,t in [("race/key","${d}/master.key"),("race/shadow","/etc/shadow"),("race/root","/")]]`,
      'while True:',
      ' L.renameat2(-100,b"race/file",-100,b"race/key",2);L.renameat2(-100,b"race/dir",-100,b"race/root",2);L.renameat2(-100,b"race/file",-100,b"race/shadow",2)',
    ].join('\\n');
    assert.equal(
      await shellIn(
        f,
        racer,
        // Ready once the loop made its five entries (a loaded machine may take a while).
        `printf '${loop}' > swap.py && (nohup python3 swap.py >/dev/null 2>&1 &) ; for i in $(seq 100); do [ "$(ls race 2>/dev/null | wc -l)" = 6 ] && break; sleep 0.1; done; ls race | wc -l`,
      ),
      '6\n[exit 0]',
    );
    const files = [1, 2, 3].map((i) => join(scratch, `race-${i}.tar.gz`));
    const runs = await Promise.all(files.map((file) => cohort(['backup', file, '--data-dir', d])));
    const reported: string[][] = [];
    for (const [i, r] of runs.entries()) {
      assert.equal(r.code, 0, r.err);
      const summary = JSON.parse(r.out);
      assert.deepEqual(summary.interns_failed, {}, `backup ${i + 1}: no intern failed`);
      reported.push(summary.intern_files_skipped[racer] ?? []);
      const { bytes, entries } = await everything(files[i]!, scratch);
      for (const [what, secret] of Object.entries(host))
        assert.equal(bytes.includes(secret), false, `backup ${i + 1} holds the host's ${what}`);
      assert.ok(entries.includes('files.tar:work/swap.py:File'), `the tenant's own files are there: ${entries}`);
    }
    // Every backup names what it skipped: the unreadable file always, and what the loop changed
    // while tar read it when tar noticed (a swap it did not notice left it a consistent copy of
    // something of the tenant's, or a link).
    for (const [i, lines] of reported.entries()) {
      assert.ok(
        lines.includes('work/race/locked: Warning: Cannot open: Permission denied'),
        `backup ${i + 1}: ${lines}`,
      );
      for (const line of lines) assert.match(line, /^work\/race[/:]/, line);
    }
    assert.equal(await shellIn(f, racer, "pkill -f '^python3 swap.py'; echo stopped"), 'stopped\n[exit 0]');
  });

  test("a stopped intern's links are kept as links, never followed", async () => {
    const keeper = await f.intern('links');
    const d = f.gw.dataDir;
    assert.equal(
      await shellIn(f, keeper, `ln -s ${d}/master.key key && ln -s /etc/shadow shadow && ln -s / root && echo ok`),
      'ok\n[exit 0]',
    );
    assert.equal((await f.gw.call('POST', `/interns/${keeper}/suspend`)).status, 200);
    await f.gw.ctx.interns.idle();
    const file = join(scratch, 'links.tar.gz');
    const r = await cohort(['backup', file, '--data-dir', d]);
    assert.equal(r.code, 0, r.err);
    const { bytes, entries } = await everything(file, scratch);
    for (const [what, secret] of Object.entries(host)) assert.equal(bytes.includes(secret), false, what);
    for (const link of [
      `work/key:SymbolicLink->${d}/master.key`,
      'work/shadow:SymbolicLink->/etc/shadow',
      'work/root:SymbolicLink->/',
    ])
      assert.ok(entries.includes(`files.tar:${link}`), `${link} in ${entries.filter((e) => e.includes('Symbolic'))}`);
  });

  test('an intern whose files cannot be read fails its own entry only: the backup completes, says which and why, and restores the rest', async () => {
    // A hard link of the tenant's own is kept as the file it names (an archive holds no link entries).
    assert.equal(
      await shellIn(f, racer, 'echo kept > kept.txt && ln kept.txt kept-too.txt && echo ok'),
      'ok\n[exit 0]',
    );
    const broken = await f.intern('broken');
    assert.equal((await f.gw.call('POST', `/interns/${broken}/suspend`)).status, 200);
    await f.gw.ctx.interns.idle();
    writeFileSync(join(f.gw.dataDir, 'interns', broken, 'disk.img'), 'not an ext4 image');
    const file = join(scratch, 'broken.tar.gz');
    const r = await cohort(['backup', file, '--data-dir', f.gw.dataDir]);
    assert.equal(r.code, 0, r.err);
    const summary = JSON.parse(r.out);
    assert.deepEqual(Object.keys(summary.interns_failed), [broken]);
    assert.match(summary.interns_failed[broken], /^could not mount the intern's disk /);
    assert.ok(summary.intern_files > 0, "the other interns' files are in it");

    const target = mkdtempSync(join(scratch, 'restored-'));
    // Made by hand to hold the master key, as the docs say, with a usual umask.
    chmodSync(target, 0o755);
    copyFileSync(join(f.gw.dataDir, 'master.key'), join(target, 'master.key'));
    const back = await cohort(['restore', file, '--data-dir', target]);
    assert.equal(back.code, 0, back.err);
    assert.equal(statSync(target).mode & 0o777, 0o700);
    // Every file and folder the restore wrote is the operator's alone, from the first byte.
    const loose = readdirSync(target, { recursive: true, withFileTypes: true })
      .map((e) => ({ path: join(e.parentPath, e.name), dir: e.isDirectory() }))
      .filter(({ path, dir }) => (statSync(path).mode & 0o777) !== (dir ? 0o700 : 0o600))
      .map(({ path }) => `${path} ${(statSync(path).mode & 0o777).toString(8)}`);
    assert.deepEqual(loose, []);
    assert.deepEqual(
      readdirSync(join(target, 'interns')).sort(),
      readdirSync(join(f.gw.dataDir, 'interns'))
        .filter((i) => i !== broken)
        .sort(),
    );
  });
});

describe('restore of a crafted archive', { skip: noSandbox }, () => {
  let f: InternFixture;
  let scratch: string;
  let unpacked: string;
  let id: string;

  before(async () => {
    scratch = mkdtempSync(join(tmpdir(), 'cohort-crafted-'));
    f = await startInternFixture({ onDisk: true, env: { COHORT_INTERN_DISK_MB: '64' } });
    id = await f.intern('crafted');
    await shellIn(f, id, 'echo real > real.txt');
    const file = join(scratch, 'real.tar.gz');
    assert.equal((await cohort(['backup', file, '--data-dir', f.gw.dataDir])).code, 0);
    unpacked = join(scratch, 'unpacked');
    mkdirSync(unpacked);
    await tarExtract({ file, cwd: unpacked });
  });
  after(async () => {
    await f.close();
    rmSync(scratch, { recursive: true, force: true });
  });

  /** A restore of `file` into a new data dir with the right master key: refused with `message`, nothing written. */
  async function refused(file: string, message: string) {
    const dir = mkdtempSync(join(scratch, 'target-'));
    copyFileSync(join(f.gw.dataDir, 'master.key'), join(dir, 'master.key'));
    const r = await cohort(['restore', file, '--data-dir', dir]);
    assert.equal(r.code, 1, r.out);
    assert.equal(r.err, `cohort: ${message}\n`);
    assert.deepEqual(readdirSync(dir), ['master.key'], 'nothing written');
  }

  /** GNU tar run in `cwd`, names kept as given (-P), so that a test can write what tar never would. */
  const gnuTar = (cwd: string, args: string[]) => execFileSync('tar', ['-P', ...args], { cwd, stdio: 'pipe' });

  /** The real archive, with its intern's files.tar replaced by one whose entries `make` writes (its
   * checksum updated, so that only the entries are wrong). */
  function withFiles(name: string, make: (dir: string, tarFile: string) => void): string {
    const tree = mkdtempSync(join(scratch, `${name}-`));
    const files = join(tree, 'files.tar');
    make(tree, files);
    const out = mkdtempSync(join(scratch, `${name}-outer-`));
    execFileSync('cp', ['-a', `${unpacked}/.`, out]);
    copyFileSync(files, join(out, 'interns', id, 'files.tar'));
    const manifest = JSON.parse(readFileSync(join(out, 'manifest.json'), 'utf8'));
    manifest.checksums[`interns/${id}/files.tar`] = createHash('sha256').update(readFileSync(files)).digest('hex');
    writeFileSync(join(out, 'manifest.json'), JSON.stringify(manifest));
    const archive = join(scratch, `${name}.tar.gz`);
    gnuTar(out, ['-czf', archive, 'manifest.json', 'tables', 'interns']);
    return archive;
  }

  const inside = (entry: string, why: string) => `interns/${id}/files.tar: ${entry} is ${why}`;

  test('an absolute path, `..`, a path under a symlink, a hard link, a device, a fifo: each refused by name', async () => {
    const cases: [string, (dir: string, tarFile: string) => void, string][] = [
      [
        'absolute',
        (dir, t) => {
          writeFileSync(join(dir, 'x'), 'x');
          gnuTar(dir, ['-cf', t, '--transform', 's,^x$,/etc/cron.d/evil,', 'x']);
        },
        inside('/etc/cron.d/evil', 'an absolute path'),
      ],
      [
        'dotdot',
        (dir, t) => {
          writeFileSync(join(dir, 'x'), 'x');
          gnuTar(dir, ['-cf', t, '--transform', 's,^x$,work/../../../master.key,', 'x']);
        },
        inside('work/../../../master.key', 'a path that climbs out with ..'),
      ],
      [
        'under-a-link',
        (dir, t) => {
          mkdirSync(join(dir, 'work'));
          symlinkSync('/etc', join(dir, 'work', 'l'));
          writeFileSync(join(dir, 'passwd'), 'root::0:0::/:/bin/sh\n');
          gnuTar(dir, ['-cf', t, 'work/l']);
          gnuTar(dir, ['-rf', t, '--transform', 's,^passwd$,work/l/passwd,', 'passwd']);
        },
        inside('work/l/passwd', 'a path under a symlink of the archive'),
      ],
      [
        'hard-link',
        (dir, t) => {
          mkdirSync(join(dir, 'work'));
          writeFileSync(join(dir, 'work', 'a'), 'a');
          linkSync(join(dir, 'work', 'a'), join(dir, 'work', 'b'));
          gnuTar(dir, ['-cf', t, 'work/a', 'work/b']);
        },
        inside('work/b', 'a hard link'),
      ],
      [
        'device',
        (dir, t) => {
          mkdirSync(join(dir, 'work'));
          execFileSync('mknod', [join(dir, 'work', 'mem'), 'c', '1', '1']);
          gnuTar(dir, ['-cf', t, 'work/mem']);
        },
        inside('work/mem', 'an entry of type CharacterDevice'),
      ],
      [
        'fifo',
        (dir, t) => {
          mkdirSync(join(dir, 'work'));
          execFileSync('mkfifo', [join(dir, 'work', 'pipe')]);
          gnuTar(dir, ['-cf', t, 'work/pipe']);
        },
        inside('work/pipe', 'an entry of type FIFO'),
      ],
      [
        'outside-its-folders',
        (dir, t) => {
          writeFileSync(join(dir, 'x'), 'x');
          gnuTar(dir, ['-cf', t, '--transform', 's,^x$,daemon/sessions.json,', 'x']);
        },
        inside('daemon/sessions.json', 'a path outside agent/, work/, home/'),
      ],
    ];
    for (const [name, make, why] of cases)
      await refused(withFiles(name, make), `the archive has an entry a cohort backup never holds: ${why}`);
  });

  test("a format 1 archive (an intern's folders as plain entries, from before 2026-11-27) still restores, files and all", async () => {
    const out = mkdtempSync(join(scratch, 'v1-'));
    execFileSync('cp', ['-a', `${unpacked}/.`, out]);
    const root = join(out, 'interns', id);
    for (const name of ['daemon.tar', 'files.tar']) {
      await tarExtract({ file: join(root, name), cwd: root });
      rmSync(join(root, name));
    }
    const manifest = JSON.parse(readFileSync(join(out, 'manifest.json'), 'utf8'));
    manifest.format_version = 1;
    manifest.checksums = Object.fromEntries(
      readdirSync(out, { recursive: true, withFileTypes: true })
        .filter((e) => e.isFile() && e.name !== 'manifest.json')
        .map((e) => {
          const path = join(e.parentPath, e.name);
          return [path.slice(out.length + 1), createHash('sha256').update(readFileSync(path)).digest('hex')];
        }),
    );
    writeFileSync(join(out, 'manifest.json'), JSON.stringify(manifest));
    const archive = join(scratch, 'v1.tar.gz');
    gnuTar(out, ['-czf', archive, 'manifest.json', 'tables', 'interns']);
    const dir = mkdtempSync(join(scratch, 'v1-target-'));
    copyFileSync(join(f.gw.dataDir, 'master.key'), join(dir, 'master.key'));
    const r = await cohort(['restore', archive, '--data-dir', dir]);
    assert.equal(r.code, 0, r.err);
    const back = await startInternFixture({
      onDisk: true,
      dataDir: dir,
      keys: f.gw.keys,
      env: { COHORT_INTERN_DISK_MB: '64' },
    });
    try {
      await back.gw.ctx.interns.idle();
      assert.equal(await shellIn(back, id, 'cat real.txt'), 'real\n[exit 0]');
    } finally {
      await back.close();
    }
  });

  test('the archive itself: an entry outside its layout, or with a path that climbs out, is refused by name', async () => {
    const out = mkdtempSync(join(scratch, 'outer-'));
    execFileSync('cp', ['-a', `${unpacked}/.`, out]);
    writeFileSync(join(out, 'evil'), 'x');
    const climbs = join(scratch, 'climbs.tar.gz');
    gnuTar(out, [
      '-czf',
      climbs,
      'manifest.json',
      'tables',
      'interns',
      '--transform',
      's,^evil$,tables/../../evil,',
      'evil',
    ]);
    await refused(
      climbs,
      'the archive has an entry a cohort backup never holds: tables/../../evil is not a part of a backup (File)',
    );
    symlinkSync('/etc/passwd', join(out, 'tables', 'link.jsonl'));
    const linked = join(scratch, 'linked.tar.gz');
    gnuTar(out, ['-czf', linked, 'manifest.json', 'tables', 'interns']);
    await refused(
      linked,
      'the archive has an entry a cohort backup never holds: tables/link.jsonl is not a part of a backup (SymbolicLink)',
    );
  });
});
