// The inference router's provider registry: one adapter per adapter kind, all behind the one
// ProviderAdapter interface, sharing one keep-alive HTTP client (which honours the operator's
// egress proxy). Entry point of src/gateway/inference/providers/.
// May import: its own modules, the logger. Imported by the inference service; never imports services or store.
import { createHttpClient } from './http.ts';
import { localAdapter } from './local/index.ts';
import { openaiCompatibleAdapter } from './openai-compatible/index.ts';
import { anthropicAdapter } from './anthropic/index.ts';
import type { AdapterKind } from './catalogue.ts';
import type { ProviderAdapter } from '../types.ts';

export type Registry = { adapter(kind: AdapterKind): ProviderAdapter; close(): Promise<void> };

export function createRegistry(opts: { timeoutMs: number }): Registry {
  const client = createHttpClient(opts);
  const adapters: Record<AdapterKind, ProviderAdapter> = {
    local: localAdapter,
    openai: openaiCompatibleAdapter({ client }),
    anthropic: anthropicAdapter({ client }),
  };
  // At close every request has ended (the server closed first); what is left is idle sockets.
  return { adapter: (kind) => adapters[kind], close: () => client.close() };
}

export { providerTable, providerVar, splitModel, type ProviderTable, type ProviderInfo } from './catalogue.ts';
export { loadPriceTable, costOf, type PriceTable } from '../prices.ts';
export { selectCredentials, type Candidate, type CredentialRule } from '../select.ts';
export * from '../types.ts';
