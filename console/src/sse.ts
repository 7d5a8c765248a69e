// An incremental parser of the chat stream's server-sent events: `data:` payloads as they
// complete, and comment lines (`: keepalive`) as a sign of life.
export function sseParser(onData: (data: string) => void, onComment: () => void) {
  let buffer = '';
  let data: string[] = [];
  return (text: string) => {
    buffer += text;
    let start = 0;
    for (let end = buffer.indexOf('\n'); end !== -1; end = buffer.indexOf('\n', start)) {
      const line = buffer.charCodeAt(end - 1) === 13 ? buffer.slice(start, end - 1) : buffer.slice(start, end);
      start = end + 1;
      if (line === '') {
        if (data.length) onData(data.join('\n'));
        data = [];
      } else if (line.startsWith('data:')) data.push(line.slice(line.charCodeAt(5) === 32 ? 6 : 5));
      else if (line.startsWith(':')) onComment();
    }
    buffer = buffer.slice(start);
  };
}
