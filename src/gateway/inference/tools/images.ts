// The image API of service:image_generation: OpenAI's `POST {base URL}/images/generations`, which
// OpenAI-compatible providers serve, called with the credential the route chose. A failure is an
// UpstreamError, so the routes' retries and fallbacks apply as to any model request.
// May import: undici, ../types.ts.
import { request } from 'undici';
import { type Cancel, UpstreamError, type Usage } from '../types.ts';

export async function generateImage(o: {
  call: { model: string; baseUrl: string; apiKey: string | null };
  prompt: string;
  config: Record<string, unknown>;
  cancel: Cancel;
  timeoutMs: number;
}): Promise<{ url: string; revisedPrompt: string | null; usage: Usage | null }> {
  const signal = AbortSignal.any([o.cancel.signal, AbortSignal.timeout(o.timeoutMs)]);
  let res: Awaited<ReturnType<typeof request>>;
  try {
    res = await request(`${o.call.baseUrl.replace(/\/$/, '')}/images/generations`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        ...(o.call.apiKey ? { authorization: `Bearer ${o.call.apiKey}` } : {}),
      },
      body: JSON.stringify({ model: o.call.model, prompt: o.prompt, n: 1, ...o.config }),
      signal,
    });
  } catch (err) {
    throw new UpstreamError({
      status: 0,
      message: (err as Error).message,
      timeout: signal.aborted && !o.cancel.aborted,
    });
  }
  res.body.on('error', () => {});
  const text = await res.body.text().catch(() => '');
  let data: {
    data?: { b64_json?: string; url?: string; revised_prompt?: string }[];
    usage?: { input_tokens?: number; output_tokens?: number; total_tokens?: number };
    error?: { message?: string };
    output_format?: string;
  } = {};
  try {
    data = JSON.parse(text);
  } catch {}
  if (res.statusCode !== 200)
    throw new UpstreamError({ status: res.statusCode, message: data.error?.message ?? `status ${res.statusCode}` });
  const img = data.data?.[0];
  if (!img?.b64_json && !img?.url) throw new UpstreamError({ status: 502, message: 'the image API answered no image' });
  const format = (o.config.output_format as string | undefined) ?? data.output_format ?? 'png';
  const u = data.usage;
  return {
    url: img.b64_json ? `data:image/${format};base64,${img.b64_json}` : img.url!,
    revisedPrompt: img.revised_prompt ?? null,
    usage: u
      ? {
          prompt_tokens: u.input_tokens ?? 0,
          completion_tokens: u.output_tokens ?? 0,
          total_tokens: u.total_tokens ?? (u.input_tokens ?? 0) + (u.output_tokens ?? 0),
        }
      : null,
  };
}
