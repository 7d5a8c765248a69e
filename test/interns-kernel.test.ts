// The hostile tenant, second pass (docs/isolation.md): what its own intern's shell can ask of the
// kernel, in both approval modes, through the public chat API; a uid that outlives its intern; the
// forwarder that carries the agent's model requests; and what the intern learns of the host from
// its environment. Each refusal is checked with a call whose error differs without the filter
// (EPERM where the kernel would have said EBADF, EINVAL or yes), next to ordinary work that must
// still run.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { shellIn, startInternFixture, type ApprovalMode, type InternFixture } from './helpers/interns.ts';
import { createTestAccount } from './helpers/accounts.ts';
import { noSandbox } from './helpers/sandbox.ts';
import { startTestGateway } from './helpers/gateway.ts';
import { SYSCALLS } from '../src/runtime/sandbox/seccomp.ts';

const MODES: ApprovalMode[] = ['self-drive', 'manual'];
const x64 = process.arch === 'x64';

/** Calls the kernel refuses an intern, with arguments that fail otherwise in another way (or
 * succeed): [name, number, python arguments]. B is a zeroed 256-byte buffer. */
const PROBES: [string, number, string][] = [
  ['add_key', SYSCALLS.add_key.x64, "b'user',b'dead-drop',b'v',1,-4"],
  ['request_key', SYSCALLS.request_key.x64, "b'user',b'dead-drop',0,-4"],
  ['keyctl', SYSCALLS.keyctl.x64, '0,-4,0'],
  ['keyctl_persistent', SYSCALLS.keyctl.x64, '22,-1,-4'],
  ['bpf', SYSCALLS.bpf.x64, '0,B,0'],
  ['userfaultfd', SYSCALLS.userfaultfd.x64, '0'],
  ['perf_event_open', SYSCALLS.perf_event_open.x64, 'B,0,-1,-1,0'],
  ['io_uring_setup', SYSCALLS.io_uring_setup.x64, '1,B'],
  ['unshare_user', SYSCALLS.unshare.x64, '0x10000000'],
  ['unshare_net', SYSCALLS.unshare.x64, '0x40000000'],
  ['setns', SYSCALLS.setns.x64, '-1,0'],
  ['mount', SYSCALLS.mount.x64, "b'none',b'/tmp',b'tmpfs',0,0"],
  ['open_by_handle_at', SYSCALLS.open_by_handle_at.x64, '-100,B,0'],
  ['process_vm_readv', SYSCALLS.process_vm_readv.x64, '1,B,1,B,1,0'],
  ['kexec_load', SYSCALLS.kexec_load.x64, '0,0,0,0'],
  ['init_module', SYSCALLS.init_module.x64, "B,0,b''"],
  ['fsopen', SYSCALLS.fsopen.x64, "b'tmpfs',0"],
  ['clone3', SYSCALLS.clone3.x64, '0,0'],
];
// One line, name:errno (the scripted model hands back the first 500 characters of a result).
const PROBE =
  'python3 -c "import ctypes,os;L=ctypes.CDLL(None,use_errno=True);B=ctypes.create_string_buffer(256);' +
  "R=lambda n,r:print(n+':'+str(0 if r!=-1 else ctypes.get_errno()),end=' ');" +
  PROBES.map(([name, nr, args]) => `R('${name}',L.syscall(${nr},${args}))`).join(';') +
  ';print()"';
/** EPERM for each, but clone3's ENOSYS (libc then falls back to clone, whose flags are checked). */
const REFUSED = PROBES.map(([name]) => `${name}:${name === 'clone3' ? 38 : 1}`).join(' ');

describe('a hostile tenant and the kernel', { skip: noSandbox || (!x64 && 'the probes use x86_64 numbers') }, () => {
  let f: InternFixture;
  let a: string;
  const shell = (id: string, cmd: string, mode: ApprovalMode = 'self-drive', key?: string) =>
    shellIn(f, id, cmd, { mode, key });

  before(async () => {
    f = await startInternFixture({ onDisk: true, env: { COHORT_INTERN_DISK_MB: '64' } });
    a = await f.intern('kernel-a');
  });
  after(() => f.close());

  for (const mode of MODES) {
    test(`${mode}: keyrings, eBPF, io_uring, namespaces, mounts and the rest are refused; the commands run under two filters`, async () => {
      const out = await shell(a, `grep -E '^Seccomp' /proc/self/status; ${PROBE}; unshare -Ur id 2>&1`, mode);
      assert.equal(
        out,
        `Seccomp:\t2\nSeccomp_filters:\t2\n${REFUSED} \nunshare: unshare failed: Operation not permitted\n[exit 1]`,
      );
    });

    test(`${mode}: ordinary work still runs: node, python, git, a compiler, a pipeline`, async () => {
      const out = await shell(
        a,
        [
          'node -e "console.log(6*7)"',
          'python3 -c "print(2**10)"',
          'rm -rf repo && git init -q repo && git -C repo -c user.email=t@t -c user.name=t commit -q --allow-empty -m one && git -C repo log --format=%s',
          "printf 'int main(void){return 42;}' > m.c && gcc m.c -o m && ./m; echo gcc=$?",
          "seq 1 5 | sort -r | head -2 | tr '\\n' ,",
        ].join('; '),
        mode,
      );
      assert.equal(out, '42\n1024\none\ngcc=42\n5,4,[exit 0]');
    });

    test(`${mode}: the agent that runs the commands, of the same uid, cannot be traced or read`, async () => {
      // sh's parent is the bubblewrap that confines it, whose parent is the agent.
      const out = await shell(
        a,
        "p=$(cut -d' ' -f4 /proc/$PPID/stat); [ $(stat -c %u /proc/$p) = $(id -u) ] && echo same-uid; cat /proc/$p/environ >/dev/null 2>&1 && echo ENVIRON || echo environ-denied; python3 -c \"open('/proc/$p/mem','rb')\" 2>&1 | tail -1",
        mode,
      );
      assert.match(
        out,
        /^same-uid\nenviron-denied\nPermissionError: \[Errno 13\] Permission denied: '\/proc\/\d+\/mem'\n\[exit 0\]$/,
      );
    });
  }

  test("the environment holds no host path: not the data dir, not the launcher's OLDPWD", async () => {
    const out = await shell(a, `env | grep -c '${f.gw.dataDir}'; env | grep -E '^(OLDPWD|PWD)='`);
    assert.equal(out, '0\nPWD=/intern/work\n[exit 0]');
  });

  test("the forwarder serves the agent's model routes and nothing else", async () => {
    const routes = [
      'GET /metrics',
      'GET /',
      'GET /health',
      'GET /api/v1/openapi.json',
      'GET /api/v1/workspaces',
      'GET /api/v1/interns',
      `POST /api/v1/interns/${a}/chat/completions`,
      'GET /api/v1/agents',
      'GET /api/v1/activity',
      'POST /api/v1/chat/completions',
      'POST /api/v1/messages',
      'POST /api/v1/responses',
      'GET /api/v1/models',
    ];
    // The tenant finds the forwarder as anyone would: the one port listening on its loopback.
    const find =
      "const l=require('fs').readFileSync('/proc/net/tcp','utf8').split('\\n').find(x=>/^ *\\d+: 0100007F:\\w+ 00000000:0000 0A/.test(x));" +
      "const origin='http://127.0.0.1:'+parseInt(l.trim().split(/\\s+/)[1].split(':')[1],16);";
    // Each route's status, and `=` where the body is exactly the plain 404 (the 500-character result).
    const notFound = '{"error":{"code":404,"message":"resource not found"}}';
    const script = routes
      .map((r, i) => {
        const [method, path] = r.split(' ');
        return `await fetch(origin+'${path}',{method:'${method}',headers:{'content-type':'application/json'},body:'${method}'==='POST'?'{}':undefined}).then(async r=>o.push('${i}:'+r.status+((await r.text())===NF?'=':'')))`;
      })
      .join(';');
    const out = await shell(
      a,
      `node -e "${find}const NF='${notFound.replaceAll('"', '\\"')}',o=[];(async()=>{${script};console.log(o.join(' '))})()"`,
    );
    const want = routes.map((_, i) => (i < 9 ? `${i}:404=` : `${i}:401`)).join(' ');
    assert.equal(out, `${want}\n[exit 0]`, routes.join('\n'));
    // The gateway's own port still serves them.
    assert.equal((await fetch(f.gw.url.replace('/api/v1', '/metrics'))).status, 200);
  });

  test("a deleted intern's uid is quarantined: the next intern, in another account, gets another uid and finds nothing", async () => {
    const claims = join(f.gw.dataDir, 'run', 'uids');
    const uidOf = (id: string) => readdirSync(claims).find((u) => readFileSync(join(claims, u), 'utf8') === id);
    const drop = await f.intern('dead-drop');
    const dropUid = uidOf(drop)!;
    assert.match(await shell(drop, PROBE), /^add_key:1 request_key:1 keyctl:1 keyctl_persistent:1 /);
    assert.equal((await f.gw.call('DELETE', `/interns/${drop}`)).status, 202);
    await f.gw.ctx.interns.idle();
    assert.ok(
      readdirSync(claims).some((c) => c.startsWith(`${dropUid}.released-`)),
      'its uid is in quarantine',
    );
    const other = await createTestAccount(f.gw.ctx.store.db, { name: 'next-tenant', internsProgramme: true });
    const created = await f.gw.call('POST', '/interns', {
      key: other.apiKey,
      body: { name: 'next', provision: true },
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    await f.gw.ctx.interns.idle();
    const next = created.body.id as string;
    assert.notEqual(uidOf(next), dropUid);
    assert.match(
      await shell(next, PROBE, 'self-drive', other.apiKey),
      /^add_key:1 request_key:1 keyctl:1 keyctl_persistent:1 /,
    );
  });
});

describe('installations on one host', { skip: noSandbox }, () => {
  test('a second installation configured with a uid range that overlaps the first does not start, saying why', async () => {
    const first = await startTestGateway({ onDisk: true, env: { COHORT_INTERN_UID_BASE: '410000' } });
    try {
      await assert.rejects(
        startTestGateway({ onDisk: true, env: { COHORT_INTERN_UID_BASE: '420000' } }),
        (err: Error) =>
          err.message.includes(
            `intern uids 420000..485535 overlap those of the cohort installation at ${first.dataDir} on this host`,
          ),
      );
    } finally {
      await first.close();
    }
  });
});
