// Preloaded into the Portkey gateway's process by the benchmark: resolves `@hono/node-server`
// to the copy pinned at the repository root (1.13.5) instead of the one nested in Portkey's
// package (1.19.x), whose Response handling breaks Portkey's streaming ("TypeError: immutable").
import { register } from 'node:module';

const root = new URL('../package.json', import.meta.url).href;
const hook = `
export async function resolve(specifier, context, next) {
  if (specifier === '@hono/node-server' || specifier.startsWith('@hono/node-server/')) {
    return next(specifier, { ...context, parentURL: ${JSON.stringify(root)} });
  }
  return next(specifier, context);
}`;
register('data:text/javascript,' + encodeURIComponent(hook));
