// What a backup archive says about itself, and the checks a restore makes against it. Pure.
import { createHash } from 'node:crypto';
import { z } from 'zod';

export const FORMAT = 'cohort-backup';
/** 2: each intern's files as two tar archives (daemon.tar, files.tar); 1 kept them as plain entries. */
export const FORMAT_VERSION = 2;

/** Every table of the store, parents before children (the order a restore inserts them in). */
export const TABLES = [
  'organizations',
  'users',
  'memberships',
  'workspaces',
  'api_keys',
  'presets',
  'preset_versions',
  'byok_credentials',
  'broadcast_destinations',
  'inference_requests',
  'interns',
  'guardrails',
  'guardrail_key_assignments',
  'guardrail_member_assignments',
  'intern_repositories',
  'git_credentials',
  'intern_sessions',
  'intern_session_entries',
] as const;
export type Table = (typeof TABLES)[number];

export const Manifest = z.object({
  format: z.literal(FORMAT),
  format_version: z.number().int(),
  created_at: z.string(),
  cohort_version: z.string(),
  /** The last migration applied to the store it came from. */
  migration: z.string(),
  source: z.enum(['pglite', 'postgres']),
  /** Which master key the sealed secrets need, by fingerprint (the key itself is never in an archive). */
  master_key_fingerprint: z.string(),
  counts: z.record(z.string(), z.number().int()),
  /** Every intern, with how many of its files are in the archive; what was skipped (changed or
   * unreadable while read), or why none could be read. */
  interns: z.record(
    z.string(),
    z.object({
      files: z.number().int(),
      bytes: z.number().int(),
      skipped: z.array(z.string()).optional(),
      error: z.string().optional(),
    }),
  ),
  /** sha256 of every other entry of the archive, by path. */
  checksums: z.record(z.string(), z.string()),
});
export type Manifest = z.infer<typeof Manifest>;

export const fingerprint = (masterKey: Buffer): string =>
  `sha256:${createHash('sha256').update('cohort master key fingerprint\0').update(masterKey).digest('hex').slice(0, 32)}`;

/** Why a restore must not proceed, in words, or null. */
export function refusal(m: Manifest, target: { latestMigration: string; masterKey: Buffer | null }): string | null {
  if (m.format_version > FORMAT_VERSION)
    return `this archive's format (version ${m.format_version}) is newer than this cohort reads (${FORMAT_VERSION}); upgrade cohort`;
  if (m.migration > target.latestMigration)
    return `the backup was made by a newer cohort (its store is at migration ${m.migration}; this one knows up to ${target.latestMigration}); upgrade cohort first`;
  if (!target.masterKey)
    return `the backup's secrets are sealed under the master key ${m.master_key_fingerprint}: put that key in the data dir (master.key) or COHORT_MASTER_KEY`;
  const have = fingerprint(target.masterKey);
  if (have !== m.master_key_fingerprint)
    return `wrong master key: the backup needs ${m.master_key_fingerprint}, this installation has ${have}`;
  return null;
}
