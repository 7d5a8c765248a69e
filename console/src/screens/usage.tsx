// Usage: requests, tokens and cost per day and per model, as a stacked bar chart with the same
// figures in a table. The figures come from the request log as OpenRouter's activity endpoint
// shapes them (GET /api/v1/activity, management key, one row per day and model). Below, the
// latest requests one by one (GET /api/v1/generations), each with its logged bodies on demand
// (GET /api/v1/generation/content; docs/guides/observability.md).
import { Fragment } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { api, problem, type Problem } from '../api.ts';
import { Alert, Choice, Loading, Page } from '../ui.tsx';

export type ActivityRow = {
  date: string;
  model: string;
  requests: number;
  prompt_tokens: number;
  completion_tokens: number;
  reasoning_tokens?: number;
  usage: number;
  byok_usage_inference?: number;
};
type Metric = 'requests' | 'tokens' | 'cost';

const value = (r: ActivityRow, m: Metric) =>
  m === 'requests'
    ? r.requests
    : m === 'tokens'
      ? r.prompt_tokens + r.completion_tokens
      : r.usage + (r.byok_usage_inference ?? 0);
const format = (v: number, m: Metric) => (m === 'cost' ? `$${v.toFixed(v < 1 ? 4 : 2)}` : v.toLocaleString('en'));
/** Distinct at AA contrast against white, and told apart by the legend's order as well as colour. */
const COLOURS = ['#1d4ed8', '#b45309', '#047857', '#7e22ce', '#be123c', '#0e7490', '#4d7c0f', '#57534e'];

/** Days (oldest first), models (largest first) and each day's value per model. */
export function series(rows: ActivityRow[], m: Metric) {
  const days = [...new Set(rows.map((r) => r.date.slice(0, 10)))].sort();
  const totals = new Map<string, number>();
  for (const r of rows) totals.set(r.model, (totals.get(r.model) ?? 0) + value(r, m));
  const models = [...totals.keys()].sort((a, b) => totals.get(b)! - totals.get(a)!);
  const cell = (day: string, model: string) =>
    rows.filter((r) => r.date.slice(0, 10) === day && r.model === model).reduce((s, r) => s + value(r, m), 0);
  return { days, models, values: days.map((d) => models.map((mo) => cell(d, mo))) };
}

function Chart({ rows, metric }: { rows: ActivityRow[]; metric: Metric }) {
  const { days, models, values } = series(rows, metric);
  const max = Math.max(...values.map((v) => v.reduce((a, b) => a + b, 0)), 0) || 1;
  const W = 640,
    H = 240,
    left = 8,
    bottom = 28,
    gap = 4;
  const slot = (W - left) / Math.max(days.length, 1);
  const colour = (i: number) => COLOURS[i % COLOURS.length];
  return (
    <figure class="chart">
      <svg viewBox={`0 0 ${W} ${H}`} role="img" aria-labelledby="chart-title">
        <title id="chart-title">{`${metric} per day, stacked by model; the highest day is ${format(max, metric)}`}</title>
        {days.map((day, d) => {
          let y = H - bottom;
          return (
            <g key={day}>
              {models.map((model, i) => {
                const h = ((values[d]![i] ?? 0) / max) * (H - bottom - 8);
                y -= h;
                return h > 0 ? (
                  <rect x={left + d * slot + gap / 2} y={y} width={slot - gap} height={h} fill={colour(i)}>
                    <title>{`${day} · ${model}: ${format(values[d]![i]!, metric)}`}</title>
                  </rect>
                ) : null;
              })}
              <text x={left + d * slot + slot / 2} y={H - 10} text-anchor="middle" font-size="11" fill="#374151">
                {day.slice(5)}
              </text>
            </g>
          );
        })}
      </svg>
      <figcaption>
        <ul class="legend">
          {models.map((m, i) => (
            <li key={m}>
              <span class="swatch" style={{ background: colour(i) }} />
              {m}
            </li>
          ))}
        </ul>
      </figcaption>
    </figure>
  );
}

type Generation = {
  id: string;
  created_at: string;
  model: string;
  status: number;
  tokens_prompt: number | null;
  tokens_completion: number | null;
  total_cost: number;
  latency: number | null;
  session_id: string | null;
};
type Content = { input: { prompt: string } | { messages: unknown[] }; output: { completion: string | null } };

/** One request's logged input and output, or why there are none. */
function Bodies({ id }: { id: string }) {
  const [content, setContent] = useState<Content | null>(null);
  const [error, setError] = useState<Problem | null>(null);
  useEffect(() => {
    api<{ data: Content }>('GET', `/generation/content?id=${encodeURIComponent(id)}`).then(
      (r) => setContent(r.data),
      (e) => setError(problem(e)),
    );
  }, [id]);
  if (error)
    return (
      <p class="bodies">
        {error.status === 404
          ? 'Its bodies were not kept (I/O logging is off for it, or retention cleared them).'
          : error.message}
      </p>
    );
  if (!content) return <Loading what="the bodies" />;
  return (
    <div class="bodies">
      <p>Input</p>
      <pre class="input">{JSON.stringify(content.input, null, 2)}</pre>
      <p>Output</p>
      <pre class="output">{content.output.completion ?? ''}</pre>
    </div>
  );
}

function Requests() {
  const [rows, setRows] = useState<Generation[] | null>(null);
  const [open, setOpen] = useState<string | null>(null);
  useEffect(() => {
    api<{ data: Generation[] }>('GET', '/generations?limit=25').then(
      (r) => setRows(r.data),
      () => setRows([]),
    );
  }, []);
  if (!rows?.length) return null;
  return (
    <div class="table-wrap">
      <table class="requests">
        <caption>Latest requests</caption>
        <thead>
          <tr>
            <th scope="col">Time</th>
            <th scope="col">Model</th>
            <th scope="col">Status</th>
            <th scope="col">Tokens</th>
            <th scope="col">Cost</th>
            <th scope="col">Session</th>
            <th scope="col">Bodies</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((g) => (
            <Fragment key={g.id}>
              <tr>
                <td>{g.created_at.slice(0, 19).replace('T', ' ')}</td>
                <td>
                  <code>{g.model}</code>
                </td>
                <td>{g.status}</td>
                <td>{format((g.tokens_prompt ?? 0) + (g.tokens_completion ?? 0), 'tokens')}</td>
                <td>{format(g.total_cost, 'cost')}</td>
                <td>{g.session_id ?? ''}</td>
                <td>
                  <button
                    type="button"
                    aria-expanded={open === g.id}
                    aria-label={`Bodies of ${g.id}`}
                    onClick={() => setOpen(open === g.id ? null : g.id)}
                  >
                    {open === g.id ? 'Hide' : 'Show'}
                  </button>
                </td>
              </tr>
              {open === g.id ? (
                <tr>
                  <td colSpan={7}>
                    <Bodies id={g.id} />
                  </td>
                </tr>
              ) : null}
            </Fragment>
          ))}
        </tbody>
      </table>
    </div>
  );
}

export function Usage() {
  const [rows, setRows] = useState<ActivityRow[] | null>(null);
  const [error, setError] = useState<Problem | null>(null);
  const [metric, setMetric] = useState<Metric>('requests');
  const load = () =>
    api<{ data: ActivityRow[] }>('GET', '/activity').then(
      (r) => {
        setRows(r.data);
        setError(null);
      },
      (e) => setError(problem(e)),
    );
  useEffect(() => void load(), []);
  return (
    <Page title="Usage">
      {error ? (
        <Alert
          problem={error}
          words={error.status === 403 ? 'Usage needs a management key.' : undefined}
          onRetry={load}
        />
      ) : !rows ? (
        <Loading what="usage" />
      ) : rows.length === 0 ? (
        <p>No requests recorded yet.</p>
      ) : (
        <>
          <Choice
            label="Show"
            name="metric"
            value={metric}
            onChange={(v) => setMetric(v as Metric)}
            options={[
              ['requests', 'Requests'],
              ['tokens', 'Tokens'],
              ['cost', 'Cost (USD)'],
            ]}
          />
          <Chart rows={rows} metric={metric} />
          <div class="table-wrap">
            <table>
              <caption>Per day and model</caption>
              <thead>
                <tr>
                  <th scope="col">Day</th>
                  <th scope="col">Model</th>
                  <th scope="col">Requests</th>
                  <th scope="col">Tokens</th>
                  <th scope="col">Cost</th>
                </tr>
              </thead>
              <tbody>
                {[...rows]
                  .sort((a, b) => b.date.localeCompare(a.date) || a.model.localeCompare(b.model))
                  .map((r) => (
                    <tr key={r.date + r.model}>
                      <td>{r.date.slice(0, 10)}</td>
                      <td>
                        <code>{r.model}</code>
                      </td>
                      <td>{r.requests}</td>
                      <td>{format(value(r, 'tokens'), 'tokens')}</td>
                      <td>{format(value(r, 'cost'), 'cost')}</td>
                    </tr>
                  ))}
              </tbody>
            </table>
          </div>
          <Requests />
        </>
      )}
    </Page>
  );
}
