import { test } from 'node:test';
import assert from 'node:assert/strict';
import { resolve } from 'node:path';
import { loadConfig } from './config.ts';

test('every variable has a working default', () => {
  const c = loadConfig({});
  assert.equal(c.dataDir, resolve('./data'));
  assert.equal(c.port, 8080);
  assert.equal(c.keepaliveMs, 30_000);
  assert.equal(c.databaseUrl, undefined);
});

test('a variable set to nothing takes its default', () => {
  const c = loadConfig({ COHORT_DATA_DIR: '', PORT: '', COHORT_KEEPALIVE_MS: '', DATABASE_URL: '', LOG_LEVEL: '' });
  assert.equal(c.dataDir, resolve('./data'));
  assert.equal(c.port, 8080);
  assert.equal(c.keepaliveMs, 30_000);
  assert.equal(c.databaseUrl, undefined);
  assert.equal(c.logLevel, 'info');
});

test('a set variable is used, and a bad one names itself', () => {
  assert.equal(loadConfig({ COHORT_KEEPALIVE_MS: '500' }).keepaliveMs, 500);
  assert.throws(() => loadConfig({ COHORT_KEEPALIVE_MS: 'soon' }), /COHORT_KEEPALIVE_MS/);
});
