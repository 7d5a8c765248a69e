// Provider credential (BYOK) shapes (docs/reference/api.md#provider-credentials) and the upstream provider slug list.
import { z } from 'zod';
import { ModelSlug, Timestamp, Uuid } from '../http/common.schemas.ts';
import { StoredString } from '../http/stored.schemas.ts';

export const BYOK_PROVIDERS = [
  'ai21',
  'aion-labs',
  'akashml',
  'alibaba',
  'amazon-bedrock',
  'amazon-bedrock/claude-on-aws',
  'amazon-nova',
  'ambient',
  'anthropic',
  'anthropic/2',
  'arcee-ai',
  'assemblyai',
  'atlas-cloud',
  'avian',
  'azure',
  'baidu',
  'baseten',
  'black-forest-labs',
  'byteplus',
  'cerebras',
  'chutes',
  'cirrascale',
  'clarifai',
  'claude-on-aws',
  'cloudflare',
  'cohere',
  'coreweave',
  'cosine',
  'crusoe',
  'darkbloom',
  'databricks',
  'decart',
  'deepgram',
  'deepinfra',
  'deepseek',
  'dekallm',
  'digitalocean',
  'featherless',
  'fireworks',
  'fish-audio',
  'friendli',
  'gmicloud',
  'google-ai-studio',
  'google-vertex',
  'groq',
  'heygen',
  'inception',
  'inceptron',
  'inferact-vllm',
  'inference-net',
  'infermatic',
  'inflection',
  'io-net',
  'ionstream',
  'krea',
  'liquid',
  'makora',
  'mancer',
  'mara',
  'meta',
  'minimax',
  'mistral',
  'modal',
  'modelrun',
  'modular',
  'moonshotai',
  'morph',
  'near-ai',
  'nebius',
  'nex-agi',
  'nextbit',
  'novita',
  'nvidia',
  'ollama',
  'open-inference',
  'openai',
  'parasail',
  'perceptron',
  'perplexity',
  'phala',
  'poolside',
  'primeintellect',
  'quiver',
  'recraft',
  'reka',
  'relace',
  'runway',
  'sail-research',
  'sakana',
  'sakana-ai',
  'sambanova',
  'seed',
  'siliconflow',
  'sourceful',
  'stepfun',
  'streamlake',
  'switchpoint',
  'tencent',
  'tenstorrent',
  'thinkingmachines',
  'together',
  'typesafe',
  'unbiased',
  'upstage',
  'venice',
  'voyageai',
  'wafer',
  'wandb',
  'wandb-legacy',
  'xai',
  'xiaomi',
  'z-ai',
] as const;
export type ByokProvider = (typeof BYOK_PROVIDERS)[number];
export const ByokProvider = z.enum(BYOK_PROVIDERS, {
  error: 'must be a supported provider slug (the list is in GET /api/v1/openapi.json)',
});

export const KEY_HASH = /^[a-f0-9]{64}$/;
const MAX_SORT_ORDER = 1_000_000;

const fields = {
  key: StoredString.min(1).max(16_384),
  name: StoredString.max(255).nullable(),
  allowed_api_key_hashes: z
    .array(z.string().regex(KEY_HASH, 'must be 64 lowercase hex characters'))
    .min(1)
    .max(100)
    .nullable(),
  allowed_models: z.array(ModelSlug).max(100).nullable(),
  allowed_user_ids: z.array(StoredString.min(1).max(256)).max(100).nullable(),
  declared_zdr: z.boolean().nullable(),
  disabled: z.boolean(),
  is_byok_only: z.boolean(),
  is_fallback: z.boolean(),
  is_required: z.boolean(),
  sort_order: z.number().int().min(0).max(MAX_SORT_ORDER),
};

export const notByokOnlyFallback = (b: { is_byok_only?: boolean; is_fallback?: boolean }) =>
  !(b.is_byok_only && b.is_fallback);
export const BYOK_ONLY_WITH_FALLBACK =
  'is_byok_only cannot be combined with is_fallback (valid only on non-fallback credentials)';
const refinement = { message: BYOK_ONLY_WITH_FALLBACK, path: ['is_byok_only'] };

const Optional = z.object(fields).partial();

export const CreateByok = z
  .object({ ...Optional.shape, key: fields.key, provider: ByokProvider, workspace_id: Uuid.optional() })
  .strict()
  .refine(notByokOnlyFallback, refinement);
export type CreateByok = z.infer<typeof CreateByok>;

/** Provider and workspace are fixed at create; `key` rotates the sealed secret. */
export const UpdateByok = Optional.strict().refine(notByokOnlyFallback, refinement);
export type UpdateByok = z.infer<typeof UpdateByok>;

export const ListByokQuery = z.object({
  offset: z.coerce.number().int().min(0).default(0),
  limit: z.coerce.number().int().min(1).max(100).default(50),
  workspace_id: Uuid.optional(),
  provider: ByokProvider.optional(),
});

export const ByokId = z.object({ id: Uuid.describe('credential UUID') });

export const ByokCredential = z.object({
  id: Uuid,
  name: z.string().nullable(),
  provider: ByokProvider,
  label: z.string(),
  workspace_id: Uuid,
  created_at: Timestamp,
  disabled: z.boolean(),
  is_byok_only: z.boolean(),
  is_fallback: z.boolean(),
  is_required: z.boolean(),
  declared_zdr: z.boolean().nullable(),
  sort_order: z.number().int(),
  allowed_api_key_hashes: z.array(z.string()).nullable(),
  allowed_models: z.array(z.string()).nullable(),
  allowed_user_ids: z.array(z.string()).nullable(),
});
export type ByokCredential = z.infer<typeof ByokCredential>;
