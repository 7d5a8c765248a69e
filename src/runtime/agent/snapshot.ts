// The built-in agent as a V8 startup snapshot (see runtime/daemon/snapshot.ts, which says why and
// what must not run at build time).
import { startupSnapshot } from 'node:v8';
import { adoptSnapshotLocation } from '../../shared/entry.ts';
import { runAgent } from './main.ts';

startupSnapshot.setDeserializeMainFunction(() => {
  adoptSnapshotLocation();
  runAgent().catch((err: unknown) => {
    process.stderr.write(`cohort agent: ${(err as Error).message}\n`);
    process.exit(1);
  });
});
