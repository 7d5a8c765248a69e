// Deleting an intern while it provisions: the 202 means it is gone, daemon and directory too,
// whether the delete comes right after a create with `provision: true` or in the middle of a
// provision (the daemon already spawned), isolated or not. Real gateway, real provisioner, real daemons.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startInternFixture, type InternFixture } from '../../../test/helpers/interns.ts';
import { noSandbox } from '../../../test/helpers/sandbox.ts';
import { waitFor } from '../../../test/helpers/wait.ts';

/** Processes whose command line names the intern's directory (its launcher, sandbox and daemon). */
function processesOf(dataDir: string, id: string): number[] {
  const dir = join(dataDir, 'interns', id);
  return readdirSync('/proc')
    .filter((e) => /^\d+$/.test(e))
    .filter((e) => {
      try {
        return readFileSync(`/proc/${e}/cmdline`, 'utf8').includes(dir);
      } catch {
        return false;
      }
    })
    .map(Number);
}

const modes: { name: string; env: Record<string, string>; skip: string | false }[] = [
  { name: 'isolated', env: {}, skip: noSandbox },
  { name: 'unisolated', env: { COHORT_UNSAFE_NO_ISOLATION: '1' }, skip: false },
];

for (const mode of modes)
  describe(`deleting an intern while it provisions (${mode.name})`, { skip: mode.skip }, () => {
    let f: InternFixture;
    before(async () => {
      f = await startInternFixture({ env: mode.env });
    });
    after(() => f.close());

    /** After the 202: within a few seconds the record is gone, and so are its processes, directory
     * and socket directory; and they stay gone once the gateway's background work is done. */
    async function assertGone(id: string) {
      const dirs = [join(f.gw.dataDir, 'interns', id), join(f.gw.dataDir, 'run', 'i', id)];
      const left = async () => ({
        status: (await f.gw.call('GET', `/interns/${id}`)).status,
        processes: processesOf(f.gw.dataDir, id),
        dirs: dirs.filter((d) => existsSync(d)),
      });
      const gone = { status: 404, processes: [], dirs: [] };
      let seen = await left();
      await waitFor(
        'the intern, its processes and directories are gone (8 s after the 202)',
        async () => JSON.stringify((seen = await left())) === JSON.stringify(gone),
        { timeoutMs: 8_000, everyMs: 100 },
      ).catch(() => assert.deepEqual(seen, gone, 'gone within 8 s of the 202'));
      // Once the gateway's background work is done, nothing of the intern may come back.
      await f.gw.ctx.interns.idle();
      assert.deepEqual(await left(), gone, 'and nothing came back');
    }

    test('create with provision: true, then DELETE at once', async () => {
      const created = await f.gw.call('POST', '/interns', { body: { name: 'short-lived', provision: true } });
      assert.equal(created.status, 201);
      const del = await f.gw.call('DELETE', `/interns/${created.body.id}`);
      assert.deepEqual([del.status, del.body], [202, { deleting: true }]);
      await assertGone(created.body.id);
    });

    test('provision, then DELETE once the daemon was spawned', async () => {
      const id = (await f.gw.call('POST', '/interns', { body: { name: 'mid-start' } })).body.id as string;
      assert.equal((await f.gw.call('POST', `/interns/${id}/provision`)).status, 202);
      // The provisioner opens the daemon's log just before it spawns the daemon (before that, mkfs
      // may be what names the intern's directory).
      const log = join(f.gw.dataDir, 'interns', id, 'daemon.log');
      await waitFor('the daemon was spawned', () => existsSync(log) && processesOf(f.gw.dataDir, id).length > 0, {
        everyMs: 5,
      });
      const del = await f.gw.call('DELETE', `/interns/${id}`);
      assert.deepEqual([del.status, del.body], [202, { deleting: true }]);
      await assertGone(id);
    });

    test('provision, then DELETE as it becomes running', async () => {
      const id = (await f.gw.call('POST', '/interns', { body: { name: 'just-started' } })).body.id as string;
      assert.equal((await f.gw.call('POST', `/interns/${id}/provision`)).status, 202);
      await waitFor(
        'the provision reaches its last step (or has just passed it)',
        async () => {
          const { body } = await f.gw.call('GET', `/interns/${id}`);
          return body.progress?.step_number === 3 || body.status === 'running';
        },
        { everyMs: 5 },
      );
      assert.equal((await f.gw.call('DELETE', `/interns/${id}`)).status, 202);
      await assertGone(id);
    });
  });
