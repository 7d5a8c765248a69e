// The daemon client forwards every refusal of the protocol as the same documented error
// (status, reason, retryable, Retry-After), including the ones a real daemon only gives in
// races (409/410 attachment_failed); an unusable answer is 502 intern_rejected, no answer at all
// 502 intern_unreachable. The daemon here is a loopback HTTP server that answers as told.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { REFUSALS, refusalBody, type RefusalKind } from '../../shared/daemon-protocol.ts';
import { answerInteraction, startTurn } from './daemon-client.ts';
import { ApiError, errorBody } from '../errors.ts';

describe('daemon client refusals', () => {
  let server: Server;
  let baseUrl: string;
  let reply: { status: number; body: string; headers?: Record<string, string> } = { status: 200, body: '' };
  before(async () => {
    server = createServer((req, res) => {
      req.resume();
      res.writeHead(reply.status, { 'content-type': 'application/json', ...reply.headers }).end(reply.body);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => new Promise((r) => server.close(r)));

  const refused = async (p: Promise<unknown>) => {
    try {
      await p;
    } catch (err) {
      assert.ok(err instanceof ApiError);
      return err;
    }
    assert.fail('expected a refusal');
  };
  const target = () => ({ baseUrl, secret: 's' });

  test('every refusal kind is forwarded with its status, reason and retryability', async () => {
    for (const kind of Object.keys(REFUSALS) as RefusalKind[]) {
      if (kind === 'unauthorized') continue;
      const r = REFUSALS[kind];
      reply = {
        status: r.status,
        body: JSON.stringify(refusalBody(kind, `daemon says ${kind}`)),
        headers: r.reason === 'busy' ? { 'retry-after': '3' } : {},
      };
      const err = await refused(
        answerInteraction(target(), { sessionId: 's', interactionId: 'i', answer: 'x' }).opened,
      );
      assert.deepEqual(
        errorBody(err, { metadata: true }),
        {
          error: {
            code: r.status,
            message: `daemon says ${kind}`,
            metadata: { reason: r.reason, retryable: r.retryable },
          },
        },
        kind,
      );
      assert.deepEqual(err.headers, r.reason === 'busy' ? { 'retry-after': '3' } : {});
    }
    reply = { status: 409, body: JSON.stringify(refusalBody('busy', 'busy')) };
    const bare = await refused(startTurn(target(), { prompt: 'hi' }).opened);
    assert.deepEqual(bare.headers, { 'retry-after': '1' }, 'busy always carries Retry-After');
  });

  test('a wrong secret or an unreadable refusal is 502 intern_rejected; no daemon is 502 intern_unreachable', async () => {
    for (const r of [
      { status: 401, body: '{"error":{"code":401,"message":"no"}}' },
      { status: 500, body: '<html>' },
    ]) {
      reply = r;
      const err = await refused(startTurn(target(), { prompt: 'hi' }).opened);
      assert.deepEqual(errorBody(err, { metadata: true }).error.metadata, {
        reason: 'intern_rejected',
        retryable: false,
      });
      assert.equal(err.status, 502);
    }
    const err = await refused(startTurn({ baseUrl: 'http://127.0.0.1:9', secret: 's' }, { prompt: 'hi' }).opened);
    assert.deepEqual(errorBody(err, { metadata: true }).error.metadata, {
      reason: 'intern_unreachable',
      retryable: true,
    });
  });
});
