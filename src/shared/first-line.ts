// Reading one line ahead of a stream's other use: the secret or a warm spare's assignment on a
// daemon's stdin, a spare agent's assignment ahead of its ACP channel. Bytes are joined before they
// are decoded, so a character split between two reads arrives whole.
// May import: node only; shared by the daemon and the agent.
import type { Readable } from 'node:stream';

/** The first line of `input`; what came after it is put back for the stream's next reader. A
 * stream that ends first gives what it carried (a last line needs no newline), unless
 * `endedEarly` names the error that is then. */
export function firstLine(input: Readable, endedEarly?: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const done = (err: Error | null, line?: string) => {
      input.off('readable', onReadable);
      input.off('end', onEnd);
      input.off('error', done);
      if (err) reject(err);
      else resolve(line!);
    };
    const onEnd = () => (endedEarly ? done(new Error(endedEarly)) : done(null, Buffer.concat(chunks).toString('utf8')));
    const onReadable = () => {
      for (let chunk: Buffer | null; (chunk = input.read() as Buffer | null) !== null; ) {
        const nl = chunk.indexOf(0x0a);
        if (nl < 0) {
          chunks.push(chunk);
          continue;
        }
        chunks.push(chunk.subarray(0, nl));
        const rest = chunk.subarray(nl + 1);
        if (rest.length) input.unshift(rest);
        return done(null, Buffer.concat(chunks).toString('utf8'));
      }
    };
    input.on('readable', onReadable);
    input.on('end', onEnd);
    input.on('error', done);
  });
}
