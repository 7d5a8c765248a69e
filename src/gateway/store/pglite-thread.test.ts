import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PgliteThread } from './pglite-thread.ts';
import { crashDatabaseThread } from '../../../test/helpers/crash-thread.ts';

test('PGlite in its thread: queries, errors with their fields, transactions, COPY, close', async (t) => {
  const db = new PgliteThread();
  await db.waitReady;
  t.after(() => db.close());
  await db.exec('create table t (id int primary key, name text not null, at timestamptz not null default now())');

  await t.test('rows come back as objects or arrays; named parsers keep values as text', async () => {
    await db.query('insert into t (id, name, at) values ($1, $2, $3)', [1, 'one', '2026-01-02T03:04:05Z']);
    assert.deepEqual((await db.query('select id, name from t')).rows, [{ id: 1, name: 'one' }]);
    assert.deepEqual((await db.query('select id, name from t', [], { rowMode: 'array' })).rows, [[1, 'one']]);
    const at = (await db.query<{ at: unknown }>('select at from t', [], { parsers: { 1184: (v: string) => v } }))
      .rows[0]!.at;
    assert.equal(at, '2026-01-02 03:04:05+00');
  });

  await t.test('a database error keeps its code and constraint', async () => {
    const err = (await db
      .query('insert into t (id, name) values (1, $1)', ['again'])
      .catch((e: unknown) => e)) as Error & { code?: string; constraint?: string };
    assert.ok(err instanceof Error);
    assert.equal(err.code, '23505');
    assert.equal(err.constraint, 't_pkey');
    assert.match(err.message, /duplicate key/);
  });

  await t.test('a transaction commits when its function resolves, and rolls back when it throws', async () => {
    assert.equal(
      await db.transaction(
        async (tx) => (await tx.query('insert into t (id, name) values (2, $1) returning id', ['two'])).rows.length,
      ),
      1,
    );
    await assert.rejects(
      db.transaction(async (tx) => {
        await tx.query('insert into t (id, name) values (3, $1)', ['three']);
        throw new Error('changed my mind');
      }),
      /changed my mind/,
    );
    assert.deepEqual((await db.query('select id from t order by id')).rows, [{ id: 1 }, { id: 2 }]);
  });

  await t.test('a query from outside waits for an open transaction to end', async () => {
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let inside!: (h: Parameters<Parameters<typeof db.transaction>[0]>[0]) => void;
    const open = new Promise<Parameters<typeof inside>[0]>((r) => (inside = r));
    const tx = db.transaction(async (h) => {
      await h.query('update t set name = $1 where id = 1', ['uno']);
      inside(h);
      await held;
    });
    const h = await open;
    const outside = db.query<{ name: string }>('select name from t where id = 1');
    let answered = false;
    void outside.then(() => (answered = true));
    // The thread answers in order: a query of the transaction's sent after the outside one is
    // answered, and the outside one is not (it waits for the transaction to end).
    await h.query('select 1');
    assert.equal(answered, false);
    release();
    await tx;
    assert.deepEqual((await outside).rows, [{ name: 'uno' }]);
  });

  await t.test('COPY from a blob', async () => {
    await db.query("copy t (id, name) from '/dev/blob' with (format csv)", [], {
      blob: new Blob(['10,"ten, with a comma"\n11,eleven\n']),
    });
    assert.deepEqual((await db.query('select id, name from t where id >= 10 order by id')).rows, [
      { id: 10, name: 'ten, with a comma' },
      { id: 11, name: 'eleven' },
    ]);
  });

  await t.test('exec runs several statements', async () => {
    const results = await db.exec('select 1 as a; select 2 as b');
    assert.deepEqual(
      results.map((r) => r.rows),
      [[{ a: 1 }], [{ b: 2 }]],
    );
  });
});

test('after close, a call fails instead of waiting forever, and the close is not a loss', async () => {
  const lost: Error[] = [];
  const db = new PgliteThread({ onLost: (err) => lost.push(err) });
  await db.waitReady;
  await db.close();
  await assert.rejects(db.query('select 1'), /database thread exited/);
  assert.deepEqual(lost, []);
});

test('a thread that ends while open is reported once through onLost, and every later call fails with why', async () => {
  const lost: Error[] = [];
  const db = new PgliteThread({ onLost: (err) => lost.push(err) });
  await db.waitReady;
  assert.deepEqual((await db.query('select 1 as one')).rows, [{ one: 1 }]);
  await crashDatabaseThread({});
  const reason = 'the database thread exited (code 1): injected crash';
  await assert.rejects(db.query('select 1'), { message: reason });
  await assert.rejects(
    db.transaction(async () => {}),
    { message: reason },
  );
  await db.close();
  assert.deepEqual(
    lost.map((e) => e.message),
    [reason],
  );
});
