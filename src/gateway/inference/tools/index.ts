// The server tools (docs/guides/server-tools.md): one module per tool behind ./types.ts's
// interface, listed here; how a request names them (`tools: [{type: "service:…", parameters}]`,
// or the plugins `web`, `web-fetch` and `fusion`), the check of those entries that the three
// request schemas share, the function definitions models are offered (the name after
// `service:`), and the bound on every result before a model sees it.
// May import: zod, this folder, ../types.ts, ../../http/common.schemas.ts.
import { z } from 'zod';
import { SERVER_TOOLS } from '../../http/common.schemas.ts';
import type { ChatTool } from '../types.ts';
import type { ServerTool, ServerToolType } from './types.ts';
import { datetime } from './datetime.ts';
import { webFetch } from './web-fetch.ts';
import { webSearch } from './web-search.ts';
import { bash, shell, applyPatch } from './shell-tools.ts';
import { advisor, fusion, imageGeneration, subagent } from './model-tools.ts';
import { searchModels, toolSearch } from './catalogue-search.ts';

export const TOOLS = Object.fromEntries(
  [
    datetime,
    webFetch,
    webSearch,
    bash,
    shell,
    applyPatch,
    subagent,
    advisor,
    fusion,
    imageGeneration,
    toolSearch,
    searchModels,
  ].map((t) => [t.type, t as ServerTool]),
) as Record<ServerToolType, ServerTool>;

const KNOWN: ReadonlySet<string> = new Set(SERVER_TOOLS);

/** The function definition a model is offered for a tool (its arguments' JSON Schema, made once). */
const offered = new Map<ServerToolType, ChatTool>(
  SERVER_TOOLS.map((type) => {
    const t = TOOLS[type];
    const { $schema: _s, ...parameters } = z.toJSONSchema(t.args) as Record<string, unknown>;
    return [type, { type: 'function', function: { name: t.name, description: t.description, parameters } }];
  }),
);
export const functionOf = (type: ServerToolType): ChatTool => offered.get(type)!;

/** A request's entry for one server tool: where it came from (for error messages) and its raw settings. */
export type ToolEntry = { type: ServerToolType; config: unknown; field: string };

/** Plugins that are server tools, and their settings as the tool's `parameters`. */
const PLUGINS: Record<
  string,
  { type: ServerToolType; config: (p: Record<string, unknown>) => Record<string, unknown> }
> = {
  web: {
    type: 'service:web_search',
    config: ({ max_results, include_domains, exclude_domains, max_uses }) => ({
      max_results,
      allowed_domains: include_domains,
      excluded_domains: exclude_domains,
      max_uses,
    }),
  },
  'web-fetch': {
    type: 'service:web_fetch',
    config: ({ allowed_domains, blocked_domains, max_content_tokens, max_uses }) => ({
      allowed_domains,
      blocked_domains,
      max_content_tokens,
      max_uses,
    }),
  },
  fusion: {
    type: 'service:fusion',
    config: ({ analysis_models, model }) => ({ analysis_models, model }),
  },
};
/** Plugin settings that are about the plugin rather than the tool. */
const PLUGIN_OWN = new Set(['id', 'enabled']);
const PLUGIN_KEYS: Record<string, Set<string>> = {
  web: new Set(['max_results', 'include_domains', 'exclude_domains', 'max_uses']),
  'web-fetch': new Set(['allowed_domains', 'blocked_domains', 'max_content_tokens', 'max_uses']),
  fusion: new Set(['analysis_models', 'model']),
};

const defined = (o: Record<string, unknown>) =>
  Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));

type Body = {
  tools?: { type?: string; parameters?: unknown }[];
  plugins?: ({ id: string } & Record<string, unknown>)[] | null;
};

/** The server tools a (validated) request names, each once: its `tools` first, then its plugins. */
export function toolEntries(body: Body): ToolEntry[] {
  const out = new Map<ServerToolType, ToolEntry>();
  body.tools?.forEach((t, i) => {
    if (t.type && KNOWN.has(t.type) && !out.has(t.type as ServerToolType))
      out.set(t.type as ServerToolType, {
        type: t.type as ServerToolType,
        config: t.parameters ?? {},
        field: `tools.${i}`,
      });
  });
  body.plugins?.forEach((p, i) => {
    const plugin = PLUGINS[p.id];
    if (!plugin || p.enabled === false || out.has(plugin.type)) return;
    out.set(plugin.type, { type: plugin.type, config: defined(plugin.config(p)), field: `plugins.${i}` });
  });
  return [...out.values()];
}

type Ctx = z.core.$RefinementCtx;

/** The request schemas' check of server-tool entries: an unknown `service:` tool, and settings the tool does not take. */
export function checkToolList(tools: { type?: string; parameters?: unknown }[], ctx: Ctx): void {
  tools.forEach((t, i) => {
    if (!t.type?.startsWith('service:')) return;
    if (!KNOWN.has(t.type)) {
      ctx.addIssue({
        code: 'custom',
        path: [i, 'type'],
        message: `unknown server tool ${t.type}: one of ${SERVER_TOOLS.join(', ')}`,
      });
      return;
    }
    const r = TOOLS[t.type as ServerToolType].config.safeParse(t.parameters ?? {});
    if (!r.success)
      for (const issue of r.error.issues)
        ctx.addIssue({
          ...(issue as object),
          code: 'custom',
          message:
            issue.code === 'unrecognized_keys'
              ? `unknown setting${issue.keys.length > 1 ? 's' : ''} ${issue.keys.join(', ')}`
              : issue.message,
          path: [i, 'parameters', ...issue.path],
        } as never);
  });
}

/** The same for the plugins that are server tools. */
export function checkPluginList(plugins: ({ id: string } & Record<string, unknown>)[], ctx: Ctx): void {
  plugins.forEach((p, i) => {
    const plugin = PLUGINS[p.id];
    if (!plugin) return;
    const extra = Object.keys(p).filter((k) => !PLUGIN_OWN.has(k) && !PLUGIN_KEYS[p.id]!.has(k));
    if (extra.length)
      ctx.addIssue({ code: 'custom', path: [i, extra[0]!], message: `unknown setting of the ${p.id} plugin` });
    if (p.enabled !== undefined && typeof p.enabled !== 'boolean')
      ctx.addIssue({ code: 'custom', path: [i, 'enabled'], message: 'must be a boolean' });
    const r = TOOLS[plugin.type].config.safeParse(defined(plugin.config(p)));
    if (!r.success)
      for (const issue of r.error.issues)
        ctx.addIssue({ code: 'custom', message: issue.message, path: [i, ...issue.path] });
  });
}

/** A tool's result as the model gets it: JSON of at most `max` characters, its longest strings cut first. */
export function boundResult(result: unknown, max: number): string {
  let text = JSON.stringify(result ?? null);
  if (text.length <= max) return text;
  const marker = (n: number) => `…[cut: ${n} more characters]`;
  for (let round = 0; round < 8 && text.length > max && result && typeof result === 'object'; round++) {
    const over = text.length - max;
    const leaves: { holder: Record<string, unknown>; key: string; len: number }[] = [];
    const walk = (v: unknown) => {
      if (!v || typeof v !== 'object') return;
      for (const [k, x] of Object.entries(v)) {
        if (typeof x === 'string') leaves.push({ holder: v as Record<string, unknown>, key: k, len: x.length });
        else walk(x);
      }
    };
    walk(result);
    const longest = leaves.sort((a, b) => b.len - a.len)[0];
    if (!longest || longest.len < 64) break;
    const keep = Math.max(0, longest.len - over - 48);
    const s = longest.holder[longest.key] as string;
    longest.holder[longest.key] = s.slice(0, keep) + marker(s.length - keep);
    text = JSON.stringify(result);
  }
  return text.length <= max
    ? text
    : JSON.stringify({ truncated: text.slice(0, Math.max(0, Math.floor((max - 20) / 2))) });
}
