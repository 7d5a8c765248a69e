// A run's events with increasing seq, keeping only the last `capacity` for replay.
import type { RunEvent, RunEventBody } from '../../shared/daemon-protocol.ts';

export class EventLog {
  private readonly events: RunEvent[] = [];
  private next = 1;

  constructor(private readonly capacity: number) {}

  append(body: RunEventBody): RunEvent {
    const e = { seq: this.next++, ...body } as RunEvent;
    this.events.push(e);
    if (this.events.length > this.capacity) this.events.shift();
    return e;
  }

  /** Events with seq > after, or null when some of them were already dropped. */
  since(after: number): RunEvent[] | null {
    const first = this.events[0]?.seq ?? this.next;
    if (first > after + 1) return null;
    return this.events.filter((e) => e.seq > after);
  }

  get lastSeq(): number {
    return this.next - 1;
  }
}
