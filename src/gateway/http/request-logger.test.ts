import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import type { FastifyBaseLogger } from 'fastify';
import { createLogger } from '../../shared/log.ts';
import { lazyChild } from './request-logger.ts';

function capture(level: string) {
  const lines: Record<string, unknown>[] = [];
  const destination = new Writable({
    write(chunk, _enc, cb) {
      lines.push(JSON.parse(String(chunk)));
      cb();
    },
  });
  return { lines, log: createLogger({ level, destination }) as unknown as FastifyBaseLogger };
}

test('a line the level lets through carries the request id and is redacted like any other', () => {
  const { lines, log } = capture('warn');
  const req = lazyChild(log, { reqId: 'req-1' });
  req.info({ a: 1 }, 'filtered out');
  req.warn({ authorization: 'Bearer ck-secret-secret-secret-secret' }, 'kept');
  req.error('plain message');
  assert.deepEqual(
    lines.map((l) => [l.level, l.reqId, l.msg, l.authorization]),
    [
      [40, 'req-1', 'kept', '[REDACTED]'],
      [50, 'req-1', 'plain message', undefined],
    ],
  );
});

test('level and children follow the parent', () => {
  const { lines, log } = capture('info');
  const req = lazyChild(log, { reqId: 'req-2' });
  assert.equal(req.level, 'info');
  req.child({ part: 'x' }).info('from a child');
  req.level = 'error';
  req.warn('now filtered');
  assert.deepEqual(
    lines.map((l) => [l.reqId, l.part, l.msg]),
    [['req-2', 'x', 'from a child']],
  );
});
