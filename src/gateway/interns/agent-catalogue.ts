// The agent catalogue: which ACP agents an intern may run, owned by the operator. Tenants pick an
// id (`agent` on an intern); they never supply a command, an address or a path
// (docs/internals/architecture.md#principles, 9).
// Built in: `cohort` (the built-in agent), and `claude-code` (@zed-industries/claude-code-acp) and
// `codex` (@zed-industries/codex-acp) where installed: both are optional installs (`npm run
// install:agents`), and the catalogue names the ones missing so a tenant asking for one is told
// how the operator adds it. An operator's JSON file (COHORT_AGENTS_FILE) adds entries or replaces these.
// An entry's environment may name the intern's model endpoint as the daemon sees it inside the
// sandbox: {{base_url}} (…/api/v1), {{origin}}, {{api_key}} (the intern's key), {{model}}.
// May import: node built-ins, zod.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';
import { z } from 'zod';

export const AgentEntry = z.strictObject({
  id: z.string().regex(/^[a-z0-9][a-z0-9-]{0,63}$/),
  name: z.string().min(1).max(100),
  description: z.string().max(500).default(''),
  /** The agent's command line; null: the built-in cohort agent. */
  command: z.array(z.string().min(1)).min(1).nullable(),
  env: z.record(z.string(), z.string()).default({}),
  /** The agent's own session modes for the approval modes `manual` and `self-drive`, where its ids differ. */
  modes: z.strictObject({ manual: z.string().optional(), 'self-drive': z.string().optional() }).default({}),
  supports: z.strictObject({ sessions: z.boolean(), questions: z.boolean(), steering: z.boolean() }),
  /** The agent builds sandboxes of its own, which need user namespaces: it and what it runs then
   * keep them (the rest of the tenant's seccomp filter holds; docs/isolation.md). */
  user_namespaces: z.boolean().default(false),
});
export type AgentEntry = z.infer<typeof AgentEntry>;

/** A built-in agent this installation could offer but has not installed. */
export type MissingAgent = { id: string; name: string; install: string };

export type Catalogue = {
  entries: AgentEntry[];
  /** Built-in agents not installed (and not replaced by the operator's file). */
  missing: MissingAgent[];
  get(id: string): AgentEntry | undefined;
  ids(): string[];
};

/** How an operator installs the optional agents: one npm command for both, because npm removes
 * packages installed with --no-save that a later install was not told about. */
export const INSTALL_AGENTS = 'npm run install:agents';
const OPTIONAL: MissingAgent[] = [
  { id: 'claude-code', name: 'Claude Code', install: INSTALL_AGENTS },
  { id: 'codex', name: 'Codex', install: INSTALL_AGENTS },
];
export const DEFAULT_AGENT = 'cohort';

/** The installed file of a package, or null when it is not installed. */
function resolveInstalled(specifier: string): string | null {
  try {
    return fileURLToPath(import.meta.resolve(specifier));
  } catch {
    return null;
  }
}

function builtins(installed: (specifier: string) => string | null): AgentEntry[] {
  const out: AgentEntry[] = [
    {
      id: 'cohort',
      name: 'cohort',
      description: 'The built-in agent: a shell, file tools and questions, over the gateway’s chat completions.',
      command: null,
      env: {},
      modes: {},
      supports: { sessions: true, questions: true, steering: true },
      user_namespaces: false,
    },
  ];
  const claude = installed('@zed-industries/claude-code-acp/dist/index.js');
  if (claude) {
    out.push({
      id: 'claude-code',
      name: 'Claude Code',
      description:
        'Anthropic’s coding agent through @zed-industries/claude-code-acp, its model requests served by the gateway’s /messages.',
      command: [process.execPath, claude],
      env: {
        ANTHROPIC_BASE_URL: '{{origin}}/api',
        ANTHROPIC_API_KEY: '{{api_key}}',
        ANTHROPIC_MODEL: '{{model}}',
        ANTHROPIC_DEFAULT_SONNET_MODEL: '{{model}}',
        ANTHROPIC_DEFAULT_HAIKU_MODEL: '{{model}}',
        ANTHROPIC_DEFAULT_OPUS_MODEL: '{{model}}',
        ANTHROPIC_SMALL_FAST_MODEL: '{{model}}',
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
        DISABLE_AUTOUPDATER: '1',
        DISABLE_TELEMETRY: '1',
      },
      // Manual: Claude Code asks before edits and commands; self-drive: the daemon consents for the caller.
      modes: { manual: 'default', 'self-drive': 'default' },
      supports: { sessions: true, questions: false, steering: false },
      user_namespaces: false,
    });
  }
  // The platform's binary itself, not the package's node wrapper (which would hold a process more).
  const codexPkg = installed(`@zed-industries/codex-acp-${process.platform}-${process.arch}/package.json`);
  if (codexPkg) {
    const cfg = (k: string, v: string) => ['-c', `${k}=${JSON.stringify(v)}`];
    out.push({
      id: 'codex',
      name: 'Codex',
      description:
        'OpenAI’s coding agent through @zed-industries/codex-acp, its model requests served by the gateway’s /responses.',
      command: [
        join(dirname(codexPkg), 'bin', 'codex-acp'),
        ...cfg('model_provider', 'cohort'),
        ...cfg('model_providers.cohort.name', 'cohort'),
        ...cfg('model_providers.cohort.base_url', '{{base_url}}'),
        ...cfg('model_providers.cohort.env_key', 'OPENAI_API_KEY'),
        ...cfg('model_providers.cohort.wire_api', 'responses'),
        // A model Codex has metadata for (it warns in the chat otherwise); the gateway serves the intern's own.
        ...cfg('model', 'gpt-5.4-mini'),
      ],
      env: { OPENAI_API_KEY: '{{api_key}}' },
      // Manual: commands run in Codex's read-only sandbox until an escalation is allowed; self-drive: free in the intern's runtime.
      modes: { manual: 'read-only', 'self-drive': 'full-access' },
      supports: { sessions: true, questions: false, steering: false },
      // Its read-only sandbox is bubblewrap in a user namespace of its own.
      user_namespaces: true,
    });
  }
  return out;
}

export function loadCatalogue(
  opts: { file?: string; installed?: (specifier: string) => string | null } = {},
): Catalogue {
  const byId = new Map(builtins(opts.installed ?? resolveInstalled).map((e) => [e.id, e]));
  if (opts.file) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(readFileSync(opts.file, 'utf8'));
    } catch (err) {
      throw new Error(`COHORT_AGENTS_FILE: cannot read ${opts.file} (${(err as Error).message})`);
    }
    const list = z.array(AgentEntry).safeParse(parsed);
    if (!list.success)
      throw new Error(
        `COHORT_AGENTS_FILE: ${list.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`,
      );
    for (const e of list.data) byId.set(e.id, e);
  }
  const entries = [...byId.values()];
  const missing = OPTIONAL.filter((m) => !byId.has(m.id));
  return { entries, missing, get: (id) => byId.get(id), ids: () => entries.map((e) => e.id) };
}
