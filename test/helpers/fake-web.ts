// For the web server tools' tests: a loopback web site (pages, redirects, a large body, a page
// that never answers, a secret that must never be fetched) and a loopback search backend that
// speaks SearXNG's JSON API, Brave Search's and Tavily's, each recording what it was asked.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export type Hit = { path: string; headers: IncomingMessage['headers']; body: string };

async function listen(handler: (req: IncomingMessage, res: ServerResponse, body: string) => void) {
  const hits: Hit[] = [];
  const server: Server = createServer(async (req, res) => {
    let body = '';
    for await (const c of req) body += c;
    hits.push({ path: req.url!, headers: req.headers, body });
    handler(req, res, body);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    hits,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

export const PAGE =
  '<html><head><title>Tide tables</title><script>steal()</script></head><body><h1>High tide</h1><p>At 06:12 &amp; 18:40.</p></body></html>';

export async function startFakeWeb() {
  const site = await listen((req, res) => {
    const url = new URL(req.url!, 'http://x');
    switch (url.pathname) {
      case '/page':
        return void res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(PAGE);
      case '/text':
        return void res.writeHead(200, { 'content-type': 'text/plain' }).end('plain words');
      case '/redirect':
        return void res.writeHead(302, { location: url.searchParams.get('to') ?? '/page' }).end();
      case '/big':
        return void res.writeHead(200, { 'content-type': 'text/plain' }).end('x'.repeat(3 * 1024 * 1024));
      case '/image':
        return void res.writeHead(200, { 'content-type': 'image/png' }).end(Buffer.alloc(10));
      case '/slow':
        return; // never answers
      default:
        return void res.writeHead(404, { 'content-type': 'text/plain' }).end('no such page');
    }
  });
  return { ...site, url: (path: string) => `http://127.0.0.1:${site.port}${path}` };
}

/** Results every backend returns, whatever the query (each backend in its own shape). */
export type SearchHit = { title: string; url: string; snippet: string };

export async function startFakeSearch(results: () => SearchHit[]) {
  return listen((req, res, body) => {
    const url = new URL(req.url!, 'http://x');
    const json = (v: unknown) => void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(v));
    if (url.pathname === '/search' && req.method === 'GET' && url.searchParams.get('format') === 'json')
      return json({
        query: url.searchParams.get('q'),
        results: results().map((r) => ({ title: r.title, url: r.url, content: r.snippet, engine: 'fake' })),
      });
    if (url.pathname === '/res/v1/web/search') {
      if (req.headers['x-subscription-token'] !== 'brave-key') return void res.writeHead(401).end('{}');
      return json({ web: { results: results().map((r) => ({ title: r.title, url: r.url, description: r.snippet })) } });
    }
    if (url.pathname === '/tavily' && req.method === 'POST') {
      if (req.headers.authorization !== 'Bearer tvly-key') return void res.writeHead(401).end('{}');
      const q = JSON.parse(body) as { query: string; max_results: number };
      return json({
        query: q.query,
        results: results()
          .slice(0, q.max_results)
          .map((r) => ({ title: r.title, url: r.url, content: r.snippet })),
      });
    }
    res.writeHead(404).end();
  });
}
