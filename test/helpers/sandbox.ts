// Why a test that needs the bubblewrap sandbox skips on this host (false where it can run);
// CI installs bubblewrap, so there these tests always run.
import { sandboxAvailable } from '../../src/runtime/sandbox/index.ts';

export const noSandbox: string | false = sandboxAvailable()
  ? false
  : 'bubblewrap cannot run here (install the Debian package bubblewrap)';
