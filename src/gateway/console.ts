// The web console (source in console/, built into dist/console/ by scripts/build.mjs): its page
// at GET / for a browser, its content-hashed assets at GET /assets/<file>. It calls only the
// public /api/v1 API with a key the user pastes, so this module holds no secret and reads none.
// A client that does not ask for HTML (curl, a load balancer) still gets the JSON index of
// ops.routes.ts at GET /. Files are read once, at start, with their gzip and brotli forms.
// May import: node built-ins, the gateway app's types.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { RouteModule } from './http/app.ts';
import { defineRoute } from './http/route.ts';
import { resourceNotFound } from './errors.ts';

/** dist/console/ from src/gateway/ (tsx) and from dist/gateway/ (the build) alike. */
export const CONSOLE_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'dist', 'console');

/** Same origin only: no external script, style, font, image or connection, no framing, no form posts. */
export const CONTENT_SECURITY_POLICY =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; connect-src 'self'; manifest-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.woff2': 'font/woff2',
};

type Asset = { type: string; raw: Buffer; gz?: Buffer; br?: Buffer };

function load(dir: string): Map<string, Asset> {
  const files = new Map<string, Asset>();
  if (!existsSync(dir)) return files;
  for (const name of readdirSync(dir)) {
    const type = TYPES[extname(name)];
    if (!type) continue;
    const read = (suffix: string) =>
      existsSync(join(dir, name + suffix)) ? readFileSync(join(dir, name + suffix)) : undefined;
    files.set(name, { type, raw: readFileSync(join(dir, name)), gz: read('.gz'), br: read('.br') });
  }
  return files;
}

const SECURITY_HEADERS = {
  'content-security-policy': CONTENT_SECURITY_POLICY,
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
};

function send(req: FastifyRequest, reply: FastifyReply, asset: Asset, cacheControl: string) {
  const accepts = String(req.headers['accept-encoding'] ?? '');
  const [encoding, body] =
    asset.br && /\bbr\b/.test(accepts)
      ? ['br', asset.br]
      : asset.gz && /\bgzip\b/.test(accepts)
        ? ['gzip', asset.gz]
        : [undefined, asset.raw];
  void reply.headers({
    ...SECURITY_HEADERS,
    'content-type': asset.type,
    'cache-control': cacheControl,
    vary: 'accept-encoding',
  });
  if (encoding) void reply.header('content-encoding', encoding);
  return reply.send(body);
}

/** A browser navigating to the address asks for HTML first; fetch() and curl do not. */
const wantsPage = (req: FastifyRequest) =>
  (req.method === 'GET' || req.method === 'HEAD') &&
  (req.url === '/' || req.url.startsWith('/?')) &&
  /\btext\/html\b/.test(String(req.headers.accept ?? ''));

export const consoleRoutes: RouteModule = (app, ctx) => {
  const page = load(CONSOLE_DIR).get('index.html');
  const assets = load(join(CONSOLE_DIR, 'assets'));
  if (!page) {
    ctx.log.warn(
      { dir: CONSOLE_DIR },
      'the web console is not built (npm run build); GET / serves the JSON index only',
    );
    return;
  }
  // The page names its assets by content hash, so it must never be cached stale; they may be kept for good.
  app.addHook('onRequest', (req, reply, done) => {
    if (wantsPage(req)) return void send(req, reply, page, 'no-cache');
    done();
  });
  defineRoute(app, ctx, {
    method: 'GET',
    path: '/assets/:file',
    summary: "The web console's scripts and styles, by content hash",
    tags: ['console'],
    guard: null,
    params: z.object({ file: z.string().describe('an asset of the built console, named by its content hash') }),
    responses: {
      200: { description: 'the asset (gzip or brotli where the client accepts it)' },
      404: { description: 'no such asset' },
    },
    handler: async (req, reply, { params }) => {
      const asset = assets.get(params.file);
      if (!asset) throw resourceNotFound();
      return send(req, reply, asset, 'public, max-age=31536000, immutable');
    },
  });
};
