// Comments cite only what the repository holds: every path a comment names in src, test, bench,
// scripts, bin and console exists, every `#anchor` it gives a docs page is a heading there, and no
// comment cites a document kept outside the repository (a specification's numbered sections, the
// design notes, the folder of shared notes beside the checkout).
// A path is read as it is written: `docs/…`, `src/…` and the other top folders from the repository
// root; one starting `./` or `../` from the commenting file's folder; a bare folder/name path from
// that folder, one of its parents, or src/ and src/gateway/ (the bases the docs write paths from).
// Paths under dist/ name the build's output, which the repository does not hold, and are skipped.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { REPO } from './helpers/cli.ts';
import { comments } from './helpers/comments.ts';

const ROOTS = ['src', 'test', 'bench', 'scripts', 'bin', 'console'];
const TOP = ['docs', ...ROOTS];
const SOURCE = /\.(ts|tsx|mjs|js)$/;
// Extensions a path must end in to count as one when it is not under a top folder.
const EXT = 'ts|tsx|mjs|js|md|json|sql|css|html|sh';

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    if (e.name === 'node_modules' || e.name === 'dist') return [];
    const p = join(dir, e.name);
    if (e.isDirectory()) return sources(p);
    return SOURCE.test(e.name) ? [p] : [];
  });
}

/** GitHub's anchor for a Markdown heading. */
export function anchorOf(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

const anchorsOf = new Map<string, Set<string>>();
function anchors(file: string): Set<string> {
  let set = anchorsOf.get(file);
  if (!set) {
    const headings = [...readFileSync(file, 'utf8').matchAll(/^#{1,6} +(.+?) *#*$/gm)].map((m) => anchorOf(m[1]!));
    set = new Set(headings);
    anchorsOf.set(file, set);
  }
  return set;
}

/** Whether a path (which may hold `*` in its segments) matches a file or folder under base. */
function exists(base: string, path: string): boolean {
  if (!path.includes('*')) return existsSync(join(base, path));
  const [head, ...rest] = path.split('/').filter((s) => s !== '');
  if (head === undefined) return true;
  if (!head.includes('*')) return exists(join(base, head), rest.join('/'));
  const pattern = new RegExp(`^${head.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*')}$`);
  if (!existsSync(base)) return false;
  return readdirSync(base).some((name) => pattern.test(name) && exists(join(base, name), rest.join('/')));
}

/** What is wrong with one comment of `file`; empty when nothing is. */
export function check(file: string, text: string): string[] {
  const problems: string[] = [];
  if (text.includes('§')) problems.push('cites a § section of a document the repository does not hold');
  if (/\bSPEC\b|\bDESIGN(\.md)?\b/.test(text))
    problems.push('cites SPEC or DESIGN, which the repository does not hold');
  const dir = dirname(file);
  // A relative path up to a folder named shared is fine only where it lands on the repository's src/shared.
  for (const m of text.matchAll(/(?<![\w./])((?:\.\.\/)+shared)\b/g))
    if (!resolve(dir, m[1]!).startsWith(join(REPO, 'src'))) problems.push('cites ../shared, outside the repository');
  if (text.includes('/work/shared')) problems.push('cites ../shared, outside the repository');
  const seen = new Set<string>();
  // A path: a top folder from the root, or ./ ../ from the file, or a bare dir/name.ext.
  const pathLike = new RegExp(
    String.raw`(?<![\w.\/@:-])((?:\.\.?\/)+[\w.*\/-]+\.(?:${EXT})|(?:${TOP.join('|')})\/[\w.*\/-]*|[\w-]+(?:\/[\w.*-]+)+\.(?:${EXT}))(#[\w-]+)?`,
    'g',
  );
  for (const m of text.matchAll(pathLike)) {
    const path = m[1]!.replace(/[.,:;]+$/, '');
    if (path.startsWith('dist/')) continue;
    const anchor = m[2]?.slice(1);
    if (seen.has(path + (anchor ?? ''))) continue;
    seen.add(path + (anchor ?? ''));
    const top = TOP.some((t) => path.startsWith(`${t}/`));
    const relativeToFile = path.startsWith('./') || path.startsWith('../');
    let bases: string[];
    if (top) bases = [REPO];
    else if (relativeToFile) bases = [dir];
    else {
      bases = [join(REPO, 'src'), join(REPO, 'src/gateway')];
      for (let d = dir; d.startsWith(REPO); d = dirname(d)) bases.push(d);
    }
    // A path relative to the file that climbs out of the repository is refused whether or not it
    // exists on this machine (a clone elsewhere has nothing there).
    if (relativeToFile && !resolve(dir, path).startsWith(resolve(REPO) + sep)) {
      problems.push(`names ${path}, outside the repository`);
      continue;
    }
    const base = bases.find((b) => exists(b, path));
    if (base === undefined) {
      problems.push(`names ${path}, which does not exist`);
      continue;
    }
    if (!resolve(base, path).startsWith(REPO)) problems.push(`names ${path}, outside the repository`);
    if (anchor !== undefined && path.endsWith('.md') && !anchors(resolve(base, path)).has(anchor))
      problems.push(`names ${path}#${anchor}, but that page has no such heading`);
  }
  return problems;
}

test('every path a comment names exists, and no comment cites a document the repository lacks', () => {
  const findings: string[] = [];
  for (const root of ROOTS) {
    for (const file of sources(join(REPO, root))) {
      for (const c of comments(readFileSync(file, 'utf8'), { jsx: file.endsWith('.tsx') })) {
        for (const problem of check(file, c.text)) findings.push(`${relative(REPO, file)}:${c.line}: ${problem}`);
      }
    }
  }
  if (process.env.COMMENT_PATHS_DUMP) console.log(findings.join('\n'));
  assert.deepEqual(findings, []);
});

test('the checker itself: what counts as a broken citation', () => {
  const file = join(REPO, 'src/gateway/errors.ts');
  assert.deepEqual(check(file, ' see docs/reference/errors.md#reasons and src/gateway/http/app.ts'), []);
  assert.deepEqual(check(file, ' ./errors.test.ts and ../shared/log.ts, http/app.ts, src/runtime/*/snapshot.ts'), []);
  assert.deepEqual(check(file, ' docs/reference/errors.md#no-such-heading'), [
    'names docs/reference/errors.md#no-such-heading, but that page has no such heading',
  ]);
  assert.deepEqual(check(file, ' src/gateway/gone.ts, ./gone.ts, interns/gone.ts.'), [
    'names src/gateway/gone.ts, which does not exist',
    'names ./gone.ts, which does not exist',
    'names interns/gone.ts, which does not exist',
  ]);
  assert.deepEqual(check(file, ' (SPEC §7)'), [
    'cites a § section of a document the repository does not hold',
    'cites SPEC or DESIGN, which the repository does not hold',
  ]);
  assert.deepEqual(check(file, ' DESIGN principle 1'), ['cites SPEC or DESIGN, which the repository does not hold']);
  assert.deepEqual(check(file, ' ../../../shared/notes/ACP.md'), [
    'cites ../shared, outside the repository',
    'names ../../../shared/notes/ACP.md, outside the repository',
  ]);
  assert.equal(anchorOf('Run state: the table'), 'run-state-the-table');
});

test('comments are found where a comment is, and not inside strings, templates, regexes or JSX text', () => {
  const texts = (source: string, jsx = false) => comments(source, { jsx }).map((c) => c.text);
  assert.deepEqual(texts('a(); // one\n/* two */ b();'), [' one', ' two ']);
  assert.deepEqual(texts(`const s = 'x // no'; const t = "/* no */";`), []);
  // biome-ignore lint/suspicious/noTemplateCurlyInString: the text of a template literal, as source
  assert.deepEqual(texts('const u = `a // no ${f(/* yes */ 1)} b /* no */`;'), [' yes ']);
  assert.deepEqual(texts('const r = /\\/\\/ no [/*]/g; x = a / b; // yes'), [' yes']);
  assert.deepEqual(texts("const e = <p title='// no'>Don't // no {/* yes */}</p>;", true), [' yes ']);
  assert.deepEqual(texts('const n = a < b; // yes', true), [' yes']);
  assert.deepEqual(
    comments('x();\n\n// third line', { jsx: false }).map((c) => c.line),
    [3],
  );
});
