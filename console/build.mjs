// Builds the web console into dist/console/: one minified, content-hashed script and stylesheet
// under assets/, the page that names them, and a gzip and a brotli form of each, which the
// gateway (src/gateway/console.ts) serves as they are. Run by scripts/build.mjs; prints the
// compressed size of the first load.
import { build } from 'esbuild';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { brotliCompressSync, gzipSync, constants } from 'node:zlib';

const here = dirname(fileURLToPath(import.meta.url));
const out = join(here, '..', 'dist', 'console');

export async function buildConsole() {
  rmSync(out, { recursive: true, force: true });
  const result = await build({
    entryPoints: [join(here, 'src', 'main.tsx')],
    bundle: true,
    minify: true,
    format: 'esm',
    target: ['es2022', 'chrome110', 'firefox110', 'safari16'],
    jsx: 'automatic',
    jsxImportSource: 'preact',
    entryNames: '[name]-[hash]',
    outdir: join(out, 'assets'),
    metafile: true,
    legalComments: 'none',
    logLevel: 'warning',
  });
  const outputs = Object.keys(result.metafile.outputs).map((p) => basename(p));
  const script = outputs.find((f) => f.endsWith('.js'));
  const style = outputs.find((f) => f.endsWith('.css'));
  const page = readFileSync(join(here, 'index.html'), 'utf8')
    .replace('{{script}}', `/assets/${script}`)
    .replace('{{style}}', `/assets/${style}`);
  writeFileSync(join(out, 'index.html'), page);
  let compressed = 0;
  for (const file of [join(out, 'index.html'), join(out, 'assets', script), join(out, 'assets', style)]) {
    const raw = readFileSync(file);
    const gz = gzipSync(raw, { level: 9 });
    writeFileSync(file + '.gz', gz);
    writeFileSync(file + '.br', brotliCompressSync(raw, { params: { [constants.BROTLI_PARAM_QUALITY]: 11 } }));
    compressed += gz.length;
  }
  return { gzipBytes: compressed };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  mkdirSync(out, { recursive: true });
  const { gzipBytes } = await buildConsole();
  process.stderr.write(`cohort: console built into dist/console/ (${(gzipBytes / 1024).toFixed(1)} KB gzip)\n`);
}
