// The per-request logger Fastify hands every route as req.log. Binding the request id makes a
// pino child, an allocation and a serialisation on every request; most requests write no line
// at all, so the child is made at the first line that the level lets through.
import type { FastifyBaseLogger } from 'fastify';
import type { Bindings, ChildLoggerOptions, Level, Logger } from 'pino';

type Args = [obj: unknown, msg?: string, ...rest: unknown[]];

class LazyChild {
  #child: Logger | null = null;
  constructor(
    private readonly parent: Logger,
    private readonly bindings: Bindings,
    private readonly opts: ChildLoggerOptions,
  ) {}
  #real(): Logger {
    return (this.#child ??= this.parent.child(this.bindings, this.opts));
  }
  #write(level: Level, args: Args) {
    if (this.parent.isLevelEnabled(level)) (this.#real()[level] as (...a: Args) => void)(...args);
  }
  get level(): string {
    return (this.#child ?? this.parent).level;
  }
  set level(level: string) {
    this.#real().level = level;
  }
  isLevelEnabled(level: string) {
    return (this.#child ?? this.parent).isLevelEnabled(level);
  }
  child(bindings: Bindings, opts?: ChildLoggerOptions) {
    return this.#real().child(bindings, opts);
  }
  silent() {}
  trace(...a: Args) {
    this.#write('trace', a);
  }
  debug(...a: Args) {
    this.#write('debug', a);
  }
  info(...a: Args) {
    this.#write('info', a);
  }
  warn(...a: Args) {
    this.#write('warn', a);
  }
  error(...a: Args) {
    this.#write('error', a);
  }
  fatal(...a: Args) {
    this.#write('fatal', a);
  }
}

export function lazyChild(
  parent: FastifyBaseLogger,
  bindings: Bindings,
  opts: ChildLoggerOptions = {},
): FastifyBaseLogger {
  return new LazyChild(parent as Logger, bindings, opts) as unknown as FastifyBaseLogger;
}
