// The built-in agent as a V8 startup snapshot (see runtime/daemon/snapshot.ts, which says why and
// what must not run at build time).
import { runFromSnapshot } from '../../shared/entry.ts';
import { runAgent } from './main.ts';

runFromSnapshot('agent', () => runAgent());
