// Deleting an intern while it provisions: the 202 means it is gone, daemon and directory too,
// whether the delete comes right after a create with `provision: true` or in the middle of a
// provision (the daemon already spawned), isolated or not. Real gateway, real provisioner, real daemons.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { startInternFixture, type InternFixture } from '../../../test/helpers/interns.ts';
import { noSandbox } from '../../../test/helpers/sandbox.ts';

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
      const until = Date.now() + 8_000;
      let seen = await left();
      while (Date.now() < until && JSON.stringify(seen) !== JSON.stringify(gone)) {
        await sleep(100);
        seen = await left();
      }
      assert.deepEqual(seen, gone, 'gone within 8 s of the 202');
      await f.gw.ctx.interns.idle();
      await sleep(500);
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
      // The provisioner opens the daemon's log just before it spawns the daemon.
      const log = join(f.gw.dataDir, 'interns', id, 'daemon.log');
      for (let i = 0; i < 1000 && !existsSync(log); i++) await sleep(5);
      await sleep(50);
      assert.notDeepEqual(processesOf(f.gw.dataDir, id), [], 'the daemon was spawned');
      const del = await f.gw.call('DELETE', `/interns/${id}`);
      assert.deepEqual([del.status, del.body], [202, { deleting: true }]);
      await assertGone(id);
    });

    test('provision, then DELETE as it becomes running', async () => {
      const id = (await f.gw.call('POST', '/interns', { body: { name: 'just-started' } })).body.id as string;
      assert.equal((await f.gw.call('POST', `/interns/${id}/provision`)).status, 202);
      for (let i = 0; i < 3000; i++) {
        const s = (await f.gw.call('GET', `/interns/${id}`)).body.progress?.step_number;
        if (s === 3) break;
        await sleep(5);
      }
      assert.equal((await f.gw.call('DELETE', `/interns/${id}`)).status, 202);
      await assertGone(id);
    });
  });
