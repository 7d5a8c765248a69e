// What starting an intern's daemon takes (its secrets, model, instructions and agent), read from
// its record, its workspace's default model and the installation's agent catalogue.
import type { Db } from '../store/db.ts';
import type { Sealer } from '../crypto/seal.ts';
import type { InternRow } from '../store/schema-interns.ts';
import type { DaemonSpec } from './provisioner/index.ts';
import type { Catalogue } from './agent-catalogue.ts';
import { DEFAULT_INTERN_MODEL, openSecrets, workspaceModel } from './interns.ts';

async function modelFor(db: Db, row: InternRow): Promise<string> {
  if (row.model) return row.model;
  return (await workspaceModel(db, row.workspaceId)) ?? DEFAULT_INTERN_MODEL;
}

/** The intern's daemon spec; throws, saying how to fix it, when its agent is not installed here. */
export async function daemonSpecOf(
  o: { db: Db; sealer: Sealer; agents: Catalogue; gatewayUrl: string },
  row: InternRow,
): Promise<DaemonSpec> {
  const { secret, apiKey } = openSecrets(o.sealer, row);
  const agent = o.agents.get(row.agent);
  if (!agent) {
    const missing = o.agents.missing.find((m) => m.id === row.agent);
    const why = missing
      ? `is not installed on this installation (its operator adds it with \`${missing.install}\`)`
      : `is not in this installation's catalogue (it offers ${o.agents.ids().join(', ')})`;
    throw new Error(`the intern's agent "${row.agent}" ${why}; choose another with PATCH /interns/{id}`);
  }
  return {
    internId: row.id,
    secret,
    apiKey,
    model: await modelFor(o.db, row),
    instructions: row.instructions ?? '',
    gatewayUrl: o.gatewayUrl,
    agent: { command: agent.command, env: agent.env, modes: agent.modes, userNamespaces: agent.user_namespaces },
  };
}
