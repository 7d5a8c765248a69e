// The operator's server-tool settings from the environment (docs/reference/configuration.md,
// "Server tools"), parsed once at start by ../../config.ts. Pure.
// May import: ./types.ts, ../../http/common.schemas.ts, ../../../shared/egress-policy.ts.
import { SERVER_TOOLS } from '../../http/common.schemas.ts';
import { parseEgress } from '../../../shared/egress-policy.ts';
import type { ServerToolType, ToolsEnv } from './types.ts';

export const TOOL_DEFAULTS = {
  outputChars: 20_000,
  deadlineMs: 300_000,
  fetchMaxBytes: 2 * 1024 * 1024,
  fetchTimeoutMs: 15_000,
  sandboxMb: 64,
  sandboxTimeoutMs: 30_000,
};

/** Settings where nothing is configured: the tools that need the operator are refused, naming what to set. */
export function noServerTools(): ToolsEnv {
  return {
    off: [],
    outputChars: TOOL_DEFAULTS.outputChars,
    deadlineMs: TOOL_DEFAULTS.deadlineMs,
    webFetch: {
      policy: { rules: [] },
      anyPublic: false,
      maxBytes: TOOL_DEFAULTS.fetchMaxBytes,
      timeoutMs: TOOL_DEFAULTS.fetchTimeoutMs,
      source: 'COHORT_WEB_FETCH_EGRESS',
    },
    webSearch: { provider: null, url: null, apiKey: null },
    sandbox: null,
    sandboxOff: 'this gateway has no sandbox host',
    advisorModel: null,
    fusionModels: [],
  };
}

const list = (s: string | undefined) =>
  (s ?? '')
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean);

export function parseToolsEnv(e: {
  off?: string;
  outputChars: number;
  deadlineMs: number;
  webFetchEgress?: string;
  internEgress: string;
  fetchMaxBytes: number;
  fetchTimeoutMs: number;
  searchProvider?: 'searxng' | 'brave' | 'tavily';
  searchUrl?: string;
  searchKey?: string;
  sandbox: ToolsEnv['sandbox'];
  sandboxOff: string | null;
  advisorModel?: string;
  fusionModels?: string;
}): ToolsEnv {
  const off = list(e.off);
  const unknown = off.find((t) => !(SERVER_TOOLS as readonly string[]).includes(t));
  if (unknown) throw new Error(`COHORT_SERVER_TOOLS_OFF: ${unknown} is not a server tool (${SERVER_TOOLS.join(', ')})`);
  const spec = (e.webFetchEgress ?? e.internEgress).trim();
  const anyPublic = spec === '*';
  if (e.searchProvider === 'searxng' && !e.searchUrl)
    throw new Error(
      'COHORT_WEB_SEARCH_URL: required with COHORT_WEB_SEARCH_PROVIDER=searxng (the instance, e.g. http://127.0.0.1:8888)',
    );
  if ((e.searchProvider === 'brave' || e.searchProvider === 'tavily') && !e.searchKey)
    throw new Error(`COHORT_WEB_SEARCH_API_KEY: required with COHORT_WEB_SEARCH_PROVIDER=${e.searchProvider}`);
  return {
    off: off as ServerToolType[],
    outputChars: e.outputChars,
    deadlineMs: e.deadlineMs,
    webFetch: {
      policy: anyPublic ? { rules: [] } : parseEgress(spec.replace(/^COHORT_INTERN_EGRESS:/, '')),
      anyPublic,
      maxBytes: e.fetchMaxBytes,
      timeoutMs: e.fetchTimeoutMs,
      source:
        e.webFetchEgress !== undefined
          ? 'COHORT_WEB_FETCH_EGRESS'
          : 'COHORT_INTERN_EGRESS, as COHORT_WEB_FETCH_EGRESS is unset',
    },
    webSearch: { provider: e.searchProvider ?? null, url: e.searchUrl ?? null, apiKey: e.searchKey ?? null },
    sandbox: e.sandbox,
    sandboxOff: e.sandboxOff,
    advisorModel: e.advisorModel ?? null,
    fusionModels: list(e.fusionModels),
  };
}
