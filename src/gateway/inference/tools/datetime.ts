// service:datetime: the current date and time in an IANA time zone (the model's argument, else
// the request's `parameters.timezone`, else UTC), as an ISO 8601 timestamp with its offset.
// May import: zod, ./types.ts.
import { z } from 'zod';
import { ToolError, type ServerTool } from './types.ts';

/** Whether Intl knows the zone (IANA names, `UTC`). */
export function knownZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

const Zone = z.string().min(1).max(64).refine(knownZone, 'must be an IANA time zone, such as Europe/Paris or UTC');

/** `2026-11-27T13:05:09+01:00` for the instant in the zone, and the zone's offset in minutes. */
export function zonedIso(at: Date, zone: string): { iso: string; offsetMinutes: number } {
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
    })
      .formatToParts(at)
      .map((p) => [p.type, p.value]),
  );
  const local = Date.UTC(+parts.year!, +parts.month! - 1, +parts.day!, +parts.hour!, +parts.minute!, +parts.second!);
  const offsetMinutes = Math.round((local - Math.floor(at.getTime() / 1000) * 1000) / 60_000);
  const sign = offsetMinutes < 0 ? '-' : '+';
  const abs = Math.abs(offsetMinutes);
  const offset = `${sign}${String(Math.floor(abs / 60)).padStart(2, '0')}:${String(abs % 60).padStart(2, '0')}`;
  return {
    iso: `${parts.year}-${parts.month}-${parts.day}T${parts.hour}:${parts.minute}:${parts.second}${offset}`,
    offsetMinutes,
  };
}

const Config = z.object({ timezone: Zone.optional() }).strict();
const Args = z.object({ timezone: z.string().min(1).max(64).optional().describe('an IANA time zone; default UTC') });

export const datetime: ServerTool<z.infer<typeof Config>, z.infer<typeof Args>> = {
  type: 'service:datetime',
  name: 'datetime',
  description: 'The current date and time, in an IANA time zone (default UTC).',
  config: Config,
  args: Args,
  async run(args, ctx) {
    const zone = args.timezone ?? ctx.config.timezone ?? 'UTC';
    if (!knownZone(zone))
      throw new ToolError(`unknown time zone ${JSON.stringify(zone)}: use an IANA name such as Europe/Paris`);
    const now = new Date();
    const { iso } = zonedIso(now, zone);
    const weekday = new Intl.DateTimeFormat('en-US', { timeZone: zone, weekday: 'long' }).format(now);
    return { datetime: iso, timezone: zone, weekday, unix: Math.floor(now.getTime() / 1000) };
  },
};
