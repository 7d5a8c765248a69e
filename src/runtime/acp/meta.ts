// cohort's extensions to ACP, carried where the protocol leaves room for them (`_meta`, `_` methods).
/** `_meta` key on `usage_update`: the run's OpenAI-style usage object
 * (docs/reference/intern-chat.md#stream-chunks). */
export const META_USAGE = 'cohort/usage';
/** `_meta` key on a permission request's tool call: where the command would run, `inner` (manual
 * mode's sandbox: no network, writes only in the work dir) or `escalated` (the intern's whole runtime). */
export const META_SANDBOX = 'cohort/sandbox';
/** `_meta` key on any `session/update`: the model identifier the agent is using. */
export const META_MODEL = 'cohort/model';
/** `_meta` key on the initialize response: the agent accepts STEER_METHOD. */
export const META_STEERING = 'cohort/steering';
/** `_meta` key on a JSON-RPC error's data: whether retrying the turn may succeed. */
export const META_RETRYABLE = 'retryable';
/** Extension request (client→agent): deliver a user message into the session's running turn. */
export const STEER_METHOD = '_cohort/steer';
export type SteerParams = { sessionId: string; text: string };

/** The session modes cohort agents offer; the daemon sets one per run (`approval_mode`,
 * docs/reference/intern-chat.md#the-request). */
export const MODE_MANUAL = 'manual';
export const MODE_SELF_DRIVE = 'self-drive';
