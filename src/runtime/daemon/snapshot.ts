// The daemon as a V8 startup snapshot (scripts/build.mjs bundles this file and runs it with
// --build-snapshot): its modules are loaded and evaluated when the build runs, and a start, once
// per wake, deserializes them instead (docs/fleet.md). Nothing may run at build time that a
// process must do for itself (random ids above all: a cache filled here would repeat in every
// daemon), so all work happens in the main function.
import { runFromSnapshot } from '../../shared/entry.ts';
import { runDaemon } from './main.ts';
// What main.ts loads only after it has started the agent, loaded here, into the snapshot (not
// ./http.ts: Node 20 cannot load node:http while it makes a snapshot).
import 'pino';
import './intern.ts';

// No script in argv: the daemon's own arguments follow Node's path directly.
runFromSnapshot('daemon', () => runDaemon(process.argv.slice(1)));
