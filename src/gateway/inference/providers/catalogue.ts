// Which providers exist, how each is spoken to (adapter kind) and where (default base URL), and
// the operator's per-provider configuration from the environment:
//   COHORT_PROVIDER_<SLUG>_BASE_URL  endpoint override (a self-hosted Ollama or vLLM, a loopback test server)
//   COHORT_PROVIDER_<SLUG>_API_KEY   the operator's own key: the install's "shared capacity" for that provider
//   COHORT_PROVIDER_<SLUG>_ZDR       true/false: the data policy of shared capacity and of credentials that declare none
//   COHORT_PROVIDER_<SLUG>_DATA_COLLECTION  allow: the shared endpoint may log or train on prompts, so only workspaces
//                                    with is_data_discount_logging_enabled route to it (docs/guides/observability.md); deny (default): it does not
//   COHORT_PROVIDER_<SLUG>_MODELS    other providers' models this provider also serves, comma-separated
//                                    `model` or `model=its-own-id` (together serving openai/gpt-oss-120b):
//                                    each is one more endpoint of that model (docs/guides/model-requests.md)
// A provider with neither BASE_URL nor API_KEY set is not configured: no shared capacity, and only
// a workspace's BYOK credential for it makes it reachable (docs/abuse-resistance.md).
// <SLUG> is the provider slug upper-cased with every other character as `_` (amazon-bedrock → AMAZON_BEDROCK).
// Pure data and parsing; imports nothing but types.

export type AdapterKind = 'local' | 'openai' | 'anthropic';

export type ProviderInfo = {
  slug: string;
  kind: AdapterKind;
  baseUrl: string | null;
  /** The operator's shared-capacity key; null when none is configured. */
  sharedKey: string | null;
  /** Shared capacity needs no key (the built-in model, a local Ollama). */
  keyless: boolean;
  zdr: boolean;
  /** The operator marked its shared endpoint as logging or training on prompts (DATA_COLLECTION=allow). */
  collectsData: boolean;
  /** The operator configured it (a base URL or key in the environment); `local` always is. An
   * unconfigured provider is reachable only through a workspace's BYOK credential for it. */
  configured: boolean;
  /** Models of other providers this one also serves: model slug → this provider's own id of it. */
  serves: ReadonlyMap<string, string>;
};

/** The provider slugs a credential may name (src/gateway/management/byok.schemas.ts). */
export const PROVIDER_SLUGS =
  'ai21 aion-labs akashml alibaba amazon-bedrock amazon-bedrock/claude-on-aws amazon-nova ambient anthropic anthropic/2 arcee-ai assemblyai atlas-cloud avian azure baidu baseten black-forest-labs byteplus cerebras chutes cirrascale clarifai claude-on-aws cloudflare cohere coreweave cosine crusoe darkbloom databricks decart deepgram deepinfra deepseek dekallm digitalocean featherless fireworks fish-audio friendli gmicloud google-ai-studio google-vertex groq heygen inception inceptron inferact-vllm inference-net infermatic inflection io-net ionstream krea liquid makora mancer mara meta minimax mistral modal modelrun modular moonshotai morph near-ai nebius nex-agi nextbit novita nvidia ollama open-inference openai parasail perceptron perplexity phala poolside primeintellect quiver recraft reka relace runway sail-research sakana sakana-ai sambanova seed siliconflow sourceful stepfun streamlake switchpoint tencent tenstorrent thinkingmachines together typesafe unbiased upstage venice voyageai wafer wandb wandb-legacy xai xiaomi z-ai'.split(
    ' ',
  );

/** Public OpenAI-compatible endpoints; a slug without one here needs COHORT_PROVIDER_<SLUG>_BASE_URL. */
const OPENAI_COMPATIBLE: Record<string, string> = {
  openai: 'https://api.openai.com/v1',
  groq: 'https://api.groq.com/openai/v1',
  together: 'https://api.together.xyz/v1',
  deepinfra: 'https://api.deepinfra.com/v1/openai',
  fireworks: 'https://api.fireworks.ai/inference/v1',
  mistral: 'https://api.mistral.ai/v1',
  xai: 'https://api.x.ai/v1',
  deepseek: 'https://api.deepseek.com/v1',
  cerebras: 'https://api.cerebras.ai/v1',
  ollama: 'http://127.0.0.1:11434/v1',
  perplexity: 'https://api.perplexity.ai',
  sambanova: 'https://api.sambanova.ai/v1',
  nebius: 'https://api.studio.nebius.com/v1',
  novita: 'https://api.novita.ai/v3/openai',
  moonshotai: 'https://api.moonshot.ai/v1',
  'google-ai-studio': 'https://generativelanguage.googleapis.com/v1beta/openai',
  siliconflow: 'https://api.siliconflow.com/v1',
  alibaba: 'https://dashscope-intl.aliyuncs.com/compatible-mode/v1',
  'z-ai': 'https://api.z.ai/api/paas/v4',
  minimax: 'https://api.minimax.io/v1',
  featherless: 'https://api.featherless.ai/v1',
  chutes: 'https://llm.chutes.ai/v1',
  parasail: 'https://api.parasail.io/v1',
  inception: 'https://api.inceptionlabs.ai/v1',
  venice: 'https://api.venice.ai/api/v1',
  cohere: 'https://api.cohere.ai/compatibility/v1',
  nvidia: 'https://integrate.api.nvidia.com/v1',
};

const ANTHROPIC = new Set(['anthropic', 'anthropic/2']);
const KEYLESS = new Set(['local', 'ollama']);
const LOCAL_DEFAULT = new Set(['ollama']);
const ZDR_BY_DEFAULT = new Set(['local', 'ollama']);

export function envName(slug: string): string {
  return slug.toUpperCase().replace(/[^A-Z0-9]/g, '_');
}

/** The variable that configures `what` of a provider, as an operator types it: providerVar('amazon-bedrock', 'API_KEY') is COHORT_PROVIDER_AMAZON_BEDROCK_API_KEY. */
export const providerVar = (slug: string, what: 'BASE_URL' | 'API_KEY' | 'ZDR' | 'DATA_COLLECTION'): string =>
  `COHORT_PROVIDER_${envName(slug)}_${what}`;

export type ProviderTable = ReadonlyMap<string, ProviderInfo>;

/** Builds the table once at start from the COHORT_PROVIDER_* variables. */
export function providerTable(env: Record<string, string | undefined>): ProviderTable {
  const table = new Map<string, ProviderInfo>();
  for (const slug of ['local', ...PROVIDER_SLUGS]) {
    const kind: AdapterKind = slug === 'local' ? 'local' : ANTHROPIC.has(slug) ? 'anthropic' : 'openai';
    const name = `COHORT_PROVIDER_${envName(slug)}_`;
    const configured = slug === 'local' || !!env[name + 'BASE_URL'] || !!env[name + 'API_KEY'];
    // A default on this machine (Ollama's) is the operator's to turn on: a tenant's BYOK
    // credential must not make the gateway connect to its own loopback.
    const def = ANTHROPIC.has(slug) ? 'https://api.anthropic.com/v1' : (OPENAI_COMPATIBLE[slug] ?? null);
    const usableDefault = def && (configured || !LOCAL_DEFAULT.has(slug)) ? def : null;
    const zdr = env[name + 'ZDR'];
    const collection = env[name + 'DATA_COLLECTION'];
    if (collection !== undefined && collection !== 'allow' && collection !== 'deny')
      throw new Error(`${name}DATA_COLLECTION: allow or deny, not ${collection}`);
    table.set(slug, {
      slug,
      kind,
      baseUrl: (env[name + 'BASE_URL'] || usableDefault)?.replace(/\/+$/, '') ?? null,
      sharedKey: env[name + 'API_KEY'] || null,
      keyless: KEYLESS.has(slug) && configured,
      zdr: zdr === undefined ? ZDR_BY_DEFAULT.has(slug) : zdr === 'true' || zdr === '1',
      collectsData: collection === 'allow',
      configured,
      serves: servesOf(env[name + 'MODELS']),
    });
  }
  return table;
}

/** `a/b,c/d=own-id` → model slug → the provider's own id (by default the part after the first `/`). */
function servesOf(list: string | undefined): Map<string, string> {
  const out = new Map<string, string>();
  for (const item of (list ?? '').split(',')) {
    const [slug, own] = item.split('=').map((x) => x.trim());
    if (slug?.includes('/')) out.set(slug, own || slug.slice(slug.indexOf('/') + 1));
  }
  return out;
}

/** `provider/model` → its parts; the provider is the longest known prefix (so `anthropic/2/x` is not ambiguous). */
export function splitModel(slug: string, table: ProviderTable): { provider: ProviderInfo; model: string } | null {
  const parts = slug.split('/');
  for (let i = parts.length - 1; i >= 1; i--) {
    const provider = table.get(parts.slice(0, i).join('/'));
    if (provider) return { provider, model: parts.slice(i).join('/') };
  }
  return null;
}
